package keys_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/holds"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/redistest"
)

// Slot follows the cluster specification's test vector and agrees with
// Redis itself (CLUSTER KEYSLOT on a real cluster) for every key shape.
func TestSlotIsRedisClusterHashSlot(t *testing.T) {
	if got := keys.Slot("123456789"); got != 0x31C3 {
		t.Fatalf("Slot(123456789) = %#x, want 0x31c3 (cluster spec)", got)
	}
	for k, want := range map[string]string{
		"{user1000}.following": "user1000", "foo{}{bar}": "foo{}{bar}", "foo{{bar}}zap": "{bar",
		"foo{bar}{zap}": "bar", "{}x": "{}x", "x{": "x{", "x}y{": "x}y{",
	} { // the spec's hash tag examples, and keys without a tag
		if got := keys.HashTag(k); got != want {
			t.Errorf("HashTag(%q) = %q, want %q", k, got, want)
		}
	}

	cl := redistest.StartCluster(t)
	rc := cl.Client(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	var ks []string
	for _, in := range inputs(rng, 20) {
		for _, list := range scriptKeys {
			for _, variant := range list(in) {
				ks = append(ks, variant...)
			}
		}
	}
	ks = append(ks, "123456789", "", "{", "}", "{}", "a{b}c{d}", "\xff\x00{\x80}")
	for _, k := range ks {
		got, err := rc.Do(ctx, rc.B().ClusterKeyslot().Key(k).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if int(got) != keys.Slot(k) {
			t.Fatalf("Slot(%q) = %d, CLUSTER KEYSLOT says %d", k, keys.Slot(k), got)
		}
	}
}

// input is one set of ids the key builders are given: an event and
// another event of the same partition, an order of each, a hold token,
// seat labels, a test processor's session, an
// Idempotency-Key, a rate-limit bucket and a client (holds.Client) key.
type input struct {
	sp         keys.Space
	ev, ev2    string
	oid, oid2  string
	token      string
	labels     []string
	proc, sess string
	idem, rl   string
	client     string
}

func (in input) p() int        { return keys.Partition(in.ev) }
func (in input) order() string { k, _ := in.sp.Order(in.oid); return k }

// seats are the event's seat holds and registration seats hashes
// (lua/lib/seatholds.lua), whatever seats a script touches.
func (in input) seats() []string {
	return []string{in.sp.SeatHolds(in.ev), in.sp.OrderSeats(in.ev), in.sp.RegSeats(in.ev)}
}

// ipTokens is what the wrappers declare for a client's hold tokens, with
// a client and without (holds.Client).
func (in input) ipTokens() []string {
	return []string{in.sp.IPTokens(in.ev, in.client), in.sp.IPTokens(in.ev, "")}
}

// rooms are the room ids the room scripts' wrappers name keys of: the
// event's room, and a showing's of a multi-showing event (keys.RoomID).
func (in input) rooms() []string {
	return []string{in.ev, keys.RoomID(in.ev, "sh_1.late-show")}
}

// holds is what the wrappers that sell declare with and without seats.
func (in input) holds() []string {
	return []string{in.sp.Hold(in.ev, in.token), in.sp.Hold(in.ev, "-")}
}

// scriptKeys lists, per script (file name in lua/), the keys its Go
// wrappers declare together (each variant the wrappers build, seats and
// all), in KEYS order. TestScriptKeysTableCoversEveryScript ties it to the
// scripts' headers; TestEveryScriptsKeysShareOneSlot checks the slots. The
// wrappers themselves cannot send keys of two slots: lua.Array and
// lua.Pipeline refuse them on every Redis (so every test of a wrapper
// checks its keys), and the partner and storefront suites run on a Redis
// Cluster in make test and make reliability.
var scriptKeys = map[string]func(in input) [][]string{
	"catalog_caps": func(in input) [][]string {
		return [][]string{{in.sp.Caps(in.ev), in.sp.Sold(in.ev), in.sp.Live(in.p())}}
	},
	"discount_left": func(in input) [][]string {
		return [][]string{{in.sp.DiscountHolds(in.ev), in.sp.DiscountUsed(in.ev), in.sp.DiscountHeld(in.ev)}}
	},
	"event_restore": func(in input) [][]string {
		return [][]string{{in.sp.Caps(in.ev), in.sp.Sold(in.ev), in.sp.Booked(in.ev), in.sp.DiscountUsed(in.ev),
			in.sp.Live(in.p()), in.sp.Buyers(in.ev)}}
	},
	"idem_release":  func(in input) [][]string { return [][]string{{in.sp.Idempotency(in.idem)}} },
	"sales_resume":  func(in input) [][]string { return [][]string{{in.sp.Sold(in.ev), in.sp.Live(in.p())}} },
	"lease_extend":  func(in input) [][]string { return [][]string{{in.sp.CatalogLock()}} },
	"lease_release": func(in input) [][]string { return [][]string{{in.sp.CatalogLock()}} },
	"order_confirm": func(in input) [][]string {
		return [][]string{{in.order(), in.sp.Caps(in.ev), in.sp.Sold(in.ev), in.sp.Booked(in.ev), in.sp.DiscountHolds(in.ev),
			in.sp.DiscountUsed(in.ev), in.sp.Paid(in.p()), in.sp.Live(in.p()), in.sp.Buyers(in.ev), in.sp.OrderSeats(in.ev),
			in.sp.DiscountHeld(in.ev)}}
	},
	"order_reserve": func(in input) (out [][]string) {
		for _, h := range in.holds() {
			out = append(out, append(append([]string{in.order(), in.sp.Caps(in.ev), in.sp.Sold(in.ev), in.sp.Booked(in.ev), h,
				in.sp.DiscountHolds(in.ev), in.sp.DiscountUsed(in.ev), in.sp.Live(in.p()), in.sp.Buyers(in.ev)}, in.seats()...),
				in.sp.DiscountHeld(in.ev)))
		}
		return out
	},
	"order_status": func(in input) [][]string { return [][]string{{in.order()}} },
	"paid_ack": func(in input) [][]string {
		// one partition's stream with the orders of its entries: orders of
		// several events of that partition
		o2, _ := in.sp.Order(in.oid2)
		return [][]string{{in.sp.Paid(in.p()), in.order(), o2}}
	},
	"paydue_claim":  func(in input) [][]string { return [][]string{{in.sp.PayDue(in.p(), in.proc)}} },
	"paydue_extend": func(in input) [][]string { return [][]string{{in.sp.PayDue(in.p(), in.proc)}} },
	"paydue_retry": func(in input) [][]string {
		return [][]string{{in.session(), in.due()}}
	},
	"paysession_close": func(in input) [][]string { return [][]string{{in.session()}} },
	"paysession_open":  func(in input) [][]string { return [][]string{{in.session()}} },
	"paysession_pay":   func(in input) [][]string { return [][]string{{in.session(), in.due()}} },
	"ratelimit":        func(in input) [][]string { return [][]string{{in.sp.RateLimit(in.rl)}} },
	"reg_expire": func(in input) [][]string {
		return [][]string{{in.order(), in.sp.Sold(in.ev), in.sp.DiscountHolds(in.ev), in.sp.Buyers(in.ev),
			in.sp.Expiry(in.p()), in.sp.Live(in.p()), in.sp.Unpaid(in.ev), in.sp.IPRegistrations(in.ev), in.sp.RegSeats(in.ev),
			in.sp.DiscountHeld(in.ev)}}
	},
	"redis_time": func(in input) [][]string { return [][]string{{in.sp.Booked(in.ev)}} },
	"reg_grace":  func(in input) [][]string { return [][]string{{in.order(), in.sp.Expiry(in.p())}} },
	"reg_lost":   func(in input) [][]string { return [][]string{{in.order()}} },
	"reg_pay": func(in input) [][]string {
		// and the webhook delivery's mark (KEYS[18], with a webhook)
		return [][]string{append(append([]string{in.order(), in.sp.Caps(in.ev), in.sp.Sold(in.ev), in.sp.Booked(in.ev),
			in.sp.DiscountHolds(in.ev), in.sp.DiscountUsed(in.ev), in.sp.Paid(in.p()), in.sp.Live(in.p()), in.sp.Buyers(in.ev),
			in.sp.Expiry(in.p()), in.sp.Unpaid(in.ev), in.sp.IPRegistrations(in.ev)}, in.seats()...), in.sp.DiscountHeld(in.ev),
			in.sp.Room(in.ev), in.sp.WebhookSeen(in.proc, "evt_1", in.oid))}
	},
	"reg_register": func(in input) (out [][]string) {
		for _, h := range in.holds() {
			for _, ip := range in.ipTokens() {
				for _, rm := range in.rooms() {
					out = append(out, append(append([]string{in.order(), in.sp.Caps(in.ev), in.sp.Sold(in.ev), in.sp.Booked(in.ev), h,
						in.sp.DiscountHolds(in.ev), in.sp.DiscountUsed(in.ev), in.sp.Live(in.p()), in.sp.Buyers(in.ev)}, in.seats()...),
						in.sp.DiscountHeld(in.ev), in.sp.Expiry(in.p()), in.sp.Paid(in.p()), in.sp.Unpaid(in.ev), in.sp.IPRegistrations(in.ev), ip,
						in.sp.Room(rm), in.sp.RoomPlaces(rm), in.sp.RoomPasses(rm), in.sp.RoomAudit(rm)))
				}
			}
		}
		return out
	},
	"reg_checkout": func(in input) [][]string {
		return [][]string{{in.order(), in.sp.Expiry(in.p()), in.session(), in.session()}, {in.order(), in.sp.Expiry(in.p()), in.order(), in.order()}}
	},
	"reg_status": func(in input) [][]string { return [][]string{{in.order()}} },
	"room_join": func(in input) (out [][]string) {
		for _, rm := range in.rooms() {
			out = append(out, []string{in.sp.Room(rm), in.sp.RoomWho(rm), in.sp.RoomLine(rm), in.sp.RoomPlaces(rm), in.sp.Live(in.p()),
				in.sp.Sold(in.ev), in.sp.RoomPasses(rm), in.sp.RoomAudit(rm)})
		}
		return out
	},
	"room_leave": func(in input) (out [][]string) {
		for _, rm := range in.rooms() {
			out = append(out, []string{in.sp.Room(rm), in.sp.RoomLine(rm), in.sp.RoomPlaces(rm), in.sp.RoomPasses(rm), in.sp.RoomAudit(rm)})
		}
		return out
	},
	"room_status": func(in input) (out [][]string) {
		for _, rm := range in.rooms() {
			out = append(out, []string{in.sp.Room(rm), in.sp.RoomLine(rm), in.sp.RoomPlaces(rm), in.sp.RoomPasses(rm),
				in.sp.Sold(in.ev), in.sp.Live(in.p()), in.sp.RoomAudit(rm)})
		}
		return out
	},
	"seat_extend": func(in input) (out [][]string) {
		for _, ip := range in.ipTokens() {
			out = append(out, []string{in.sp.Hold(in.ev, in.token), ip, in.sp.SeatHolds(in.ev), in.sp.RoomPlaces(in.ev),
				in.sp.RoomPasses(in.ev)})
		}
		return out
	},
	"seat_hold": func(in input) [][]string {
		return [][]string{append(append([]string{in.sp.Hold(in.ev, in.token), in.sp.Booked(in.ev), in.sp.Live(in.p())}, in.seats()...),
			in.sp.RoomPlaces(in.ev))}
	},
	"seat_release": func(in input) [][]string {
		return [][]string{append([]string{in.sp.Hold(in.ev, in.token), in.sp.Booked(in.ev)}, in.seats()...)}
	},
	"seat_token": func(in input) (out [][]string) {
		for _, ip := range in.ipTokens() {
			out = append(out, []string{in.sp.Hold(in.ev, in.token), in.sp.IPRegistrations(in.ev), ip, in.sp.Room(in.ev),
				in.sp.RoomPlaces(in.ev), in.sp.RoomPasses(in.ev), in.sp.RoomAudit(in.ev)})
		}
		return out
	},
	"seat_token_drop": func(in input) (out [][]string) {
		for _, ip := range in.ipTokens() {
			out = append(out, []string{in.sp.Hold(in.ev, in.token), ip})
		}
		return out
	},
	"state_tick":      func(in input) [][]string { return [][]string{{in.sp.State(), in.sp.CatalogVersion()}} },
	"worker_takeover": func(in input) [][]string { return [][]string{{in.sp.Paid(in.p())}} },
}

// session is the test processor's session hash; due its due set, in the
// partition of the session's registration (payments.Hosted.dueKey).
func (in input) session() string {
	k, ok := in.sp.PaySession(in.sess)
	if !ok {
		panic("not a session id: " + in.sess)
	}
	return k
}

func (in input) due() string {
	reg, _ := keys.SessionRegistration(in.sess)
	ev, _ := keys.OrderEvent(reg)
	return in.sp.PayDue(keys.Partition(ev), in.proc)
}

// prefixes are key spaces: production's "", the tests' and deployments'
// (TICKETD_KEY_PREFIX: any text without braces, see CheckPrefix).
var prefixes = []string{"", "test:0123456789ab:", "ticketd:eu-1:", "a", "x:y:z::", "\xff\x00 \t"}

// A brace in the key prefix would move the hash tag off the partition's
// (with "{}" it scatters one script's keys over several slots): such a
// prefix is refused, and the lua package refuses to run a script whose
// keys it scattered.
func TestPrefixWithBracesIsRefused(t *testing.T) {
	for _, p := range []string{"{}:", "a{b}c:", "we{ird:", "odd}:"} {
		if keys.CheckPrefix(p) == nil {
			t.Errorf("CheckPrefix(%q) accepted it", p)
		}
	}
	for _, p := range prefixes {
		if err := keys.CheckPrefix(p); err != nil {
			t.Errorf("CheckPrefix(%q): %v", p, err)
		}
	}
	// what "{}" would do: an order and its event's capacities apart
	sp := keys.Space{Prefix: "{}:"}
	o, _ := sp.Order(keys.OrderID("ev1", "abc"))
	if keys.Slot(o) == keys.Slot(sp.Caps("ev1")) {
		t.Fatal("the example no longer shows the scattering")
	}
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"

func randID(rng *rand.Rand, chars string, minLen, maxLen int) string {
	b := make([]byte, minLen+rng.IntN(maxLen-minLen+1))
	for i := range b {
		b[i] = chars[rng.IntN(len(chars))]
	}
	return string(b)
}

// inputs returns n random inputs per prefix: event ids of every length and
// character a catalog id may have, orders, sessions and the rest.
func inputs(rng *rand.Rand, n int) []input {
	var out []input
	for _, prefix := range prefixes {
		for range n {
			in := input{sp: keys.Space{Prefix: prefix}}
			in.ev = randID(rng, idChars, 1, 64)
			for in.ev2 == "" || keys.Partition(in.ev2) != in.p() || in.ev2 == in.ev {
				in.ev2 = randID(rng, idChars, 1, 64)
			}
			lower := "abcdefghijklmnopqrstuvwxyz0123456789"
			in.oid = keys.OrderID(in.ev, randID(rng, lower, 1, 40))
			in.oid2 = keys.OrderID(in.ev2, randID(rng, lower, 1, 40))
			in.token = randID(rng, idChars+"{}:", 1, 40)
			for i := range 1 + rng.IntN(8) {
				in.labels = append(in.labels, string(rune('A'+rng.IntN(26)))+"-"+strconv.Itoa(i+1+rng.IntN(300)))
			}
			in.proc = []string{"card", "wallet", "stripe"}[rng.IntN(3)]
			in.sess = randID(rng, "abcdefghijklmnopqrstuvwxyz0123456789", 1, 8) + "_" +
				randID(rng, "abcdef0123456789", 8, 24) + "_" + in.oid
			in.idem = randID(rng, idChars+"{}:", 1, 64)
			in.rl = randID(rng, idChars+":", 1, 40)
			in.client = holds.For(nil, randID(rng, idChars+":/", 1, 43), 8).Key
			out = append(out, in)
		}
	}
	return out
}

// Every script's keys, as its wrappers build them for any event id,
// order, seat, token, code, session and key prefix, lie in one slot: Redis
// Cluster runs the script. Partition-wide keys (paid stream, marker,
// expiry and due sets) join the event's keys through the event's partition.
func TestEveryScriptsKeysShareOneSlot(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	for _, in := range inputs(rng, 300) {
		for name, list := range scriptKeys {
			for _, ks := range list(in) {
				for _, k := range ks[1:] {
					if keys.Slot(k) != keys.Slot(ks[0]) {
						t.Fatalf("%s: %q (slot %d) and %q (slot %d) are not in one slot", name,
							ks[0], keys.Slot(ks[0]), k, keys.Slot(k))
					}
				}
			}
		}
	}
}

// The table above knows every script, and as many keys as each script's
// header declares (KEYS[n] lines; "KEYS[n..]" a tail of seat keys): a
// script or a key added without its line here fails.
func TestScriptKeysTableCoversEveryScript(t *testing.T) {
	files, err := filepath.Glob("../../lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	fixed := regexp.MustCompile(`^--\s*KEYS\[(\d+)\]`)
	tail := regexp.MustCompile(`^--\s*KEYS\[(\d+)\s*\.\.`)
	rng := rand.New(rand.NewPCG(5, 5))
	in := inputs(rng, 1)[1]
	var names []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		names = append(names, name)
		list, ok := scriptKeys[name]
		if !ok {
			t.Errorf("lua/%s.lua has no line in scriptKeys: name the keys its wrapper declares", name)
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n, tailed := 0, false
		for _, line := range strings.Split(string(b), "\n") {
			if m := tail.FindStringSubmatch(line); m != nil {
				tailed = true
			} else if m := fixed.FindStringSubmatch(line); m != nil {
				n = max(n, atoi(t, m[1]))
			}
		}
		if n == 0 {
			t.Errorf("lua/%s.lua: its header declares no KEYS", name)
		}
		want := n
		if tailed { // for paid_ack the two orders' hashes
			want = n + 2
		}
		for _, ks := range list(in) {
			if len(ks) != want {
				t.Errorf("%s: scriptKeys has %d keys, the script's header declares %d (and a tail: %v)", name, len(ks), n, tailed)
				break
			}
		}
	}
	for name := range scriptKeys {
		if !slices.Contains(names, name) {
			t.Errorf("scriptKeys names %s, which is not a script in lua/", name)
		}
	}
}

// A cluster spreads the event partitions over all its masters: with three
// masters splitting the slots evenly (redis-cli --cluster create), each
// holds some of the 64 partitions, so each serves some events.
func TestPartitionsSpreadOverThreeMasters(t *testing.T) {
	for _, prefix := range []string{"", "test:0123456789ab:", "ticketd:eu-1:"} {
		sp := keys.Space{Prefix: prefix}
		perMaster := [3]int{}
		for p := range keys.Partitions {
			perMaster[keys.Slot(sp.Live(p))*3/keys.Slots]++
		}
		for m, n := range perMaster {
			if n < keys.Partitions/6 {
				t.Errorf("prefix %q: master %d holds %d of %d partitions: %v", prefix, m, n, keys.Partitions, perMaster)
			}
		}
	}
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
