package channel_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/lockout"
	"github.com/ticketd/ticketd/handlers/servertest"
)

// The tests reach ticketd through a trusted proxy at 127.0.0.1, so that
// X-Forwarded-For names the client; without it the client is 127.0.0.1
// itself, on the test channels' allowlists.
func startBehindProxy(t *testing.T) *servertest.Server {
	t.Helper()
	return start(t, servertest.Options{Trusted: "127.0.0.1/32"})
}

// Low limits for the tests that lock callers out and go on: a lock then
// lasts 12 s (IP) or 15 s (key) after the last failure, so the requests
// that follow find it however slow the machine. (With the defaults, 2 s
// and 3 s, a stalled machine would see it end and the test fail.)
const perIP, perKey = 5, 4

func startLowLimits(t *testing.T) *servertest.Server {
	t.Helper()
	return start(t, servertest.Options{Trusted: "127.0.0.1/32", LockoutPerIP: perIP, LockoutPerKey: perKey})
}

// from sends h as the client at ip.
func from(ip string, h map[string]string) map[string]string {
	return with(h, "X-Forwarded-For", ip)
}

func wrongSecret(ch string) map[string]string {
	return map[string]string{"x-service-key": "ck_" + ch, "x-service-secret": "not-the-secret"}
}

// expectLocked checks a lockout's 429: RATE_LIMITED with Retry-After and
// the same retryAfter in the body.
func expectLocked(t *testing.T, r *servertest.Response) {
	t.Helper()
	expect(t, r, 429, "RATE_LIMITED")
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Fatalf("Retry-After %q, want whole seconds >= 1", r.Header.Get("Retry-After"))
	}
	if r.Raw["retryAfter"] != float64(secs) {
		t.Fatalf("retryAfter %v in the body, Retry-After %d", r.Raw["retryAfter"], secs)
	}
}

// throttleKeys lists the Redis keys of failed-authentication counts.
func throttleKeys(t *testing.T, s *servertest.Server) []string {
	var out []string
	for _, k := range redisKeys(t, s) {
		if strings.Contains(k, "authfail:") {
			out = append(out, k)
		}
	}
	return out
}

// waitUntilOK polls until a call succeeds: the lock ends with the window.
func waitUntilOK(t *testing.T, call func() *servertest.Response) {
	t.Helper()
	var r *servertest.Response
	waitFor(t, func() bool { r = call(); return r.Status == 200 })
}

// TestWrongSecretsAreThrottled: 300 wrong secrets for one key (as the probe
// sent them, from the partner's own allowlisted server) get 429 once the
// IP's limit is spent, the right secret too while the lock lasts, and the
// right secret passes again once the window allows.
func TestWrongSecretsAreThrottled(t *testing.T) {
	t.Parallel()
	s := startBehindProxy(t)
	start := time.Now()
	var unauthorized int
	for i := 1; i <= 300; i++ {
		r := s.Do(t, "GET", "/v1/channel/events", wrongSecret("a"), nil)
		switch {
		case r.Status == 401:
			expect(t, r, 401, "INVALID_CREDENTIALS")
			unauthorized++
		case i > lockout.DefaultPerIP:
			expectLocked(t, r)
		default:
			t.Fatalf("attempt %d of %d: %s", i, lockout.DefaultPerIP, r)
		}
		// One over the limit is refused, unless the bucket had time to
		// give one back (a machine stalled for 2 s).
		if i == lockout.DefaultPerIP+1 && r.Status != 429 && time.Since(start) < time.Minute/lockout.DefaultPerIP {
			t.Fatalf("attempt %d, one over the limit: %s", i, r)
		}
	}
	// The bucket refills one failure every 2 s: only that many more get
	// their secret checked.
	if max := lockout.DefaultPerIP + int(time.Since(start)/(2*time.Second)) + 1; unauthorized > max {
		t.Fatalf("%d of 300 wrong secrets answered 401, want at most %d", unauthorized, max)
	}
	ok := func() *servertest.Response { return s.Do(t, "GET", "/v1/channel/events", keyed("a"), nil) }
	// The bucket was full at start, so the lock lasts at least one
	// interval from there; only a machine stalled that long sees it end.
	if r := ok(); r.Status != 200 || time.Since(start) < time.Minute/lockout.DefaultPerIP {
		expectLocked(t, r)
	}
	waitUntilOK(t, ok)
}

// TestStrangersSprayingAKeyDoNotLockOutItsServers: wrong secrets for one
// key from many addresses lock the key for everyone off its allowlist,
// never for the channel's own servers.
func TestStrangersSprayingAKeyDoNotLockOutItsServers(t *testing.T) {
	t.Parallel()
	s := startLowLimits(t)
	for i := 1; i <= perKey+5; i++ {
		r := s.Do(t, "GET", "/v1/channel/events", from(fmt.Sprintf("203.0.113.%d", i), wrongSecret("a")), nil)
		if i <= perKey {
			expect(t, r, 401, "INVALID_CREDENTIALS")
		} else {
			expectLocked(t, r)
		}
	}
	// A stranger holding the right secret is refused before it is checked.
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from("198.51.100.1", keyed("a")), nil))
	// The channel's servers (127.0.0.1) go on working.
	for i := 0; i < 3; i++ {
		expect(t, s.Do(t, "GET", "/v1/channel/events", keyed("a"), nil), 200, "")
	}
	// Another key is not locked.
	expect(t, s.Do(t, "GET", "/v1/channel/events", from("198.51.100.1", keyed("b")), nil), 403, "IP_NOT_ALLOWED")
}

// TestLockedIPIsRefusedForEveryCredential: an IP locked by wrong
// credentials gets 429 for other keys and for buyer sessions too; unknown
// keys are counted per IP only.
func TestLockedIPIsRefusedForEveryCredential(t *testing.T) {
	t.Parallel()
	s := startLowLimits(t)
	const attacker = "203.0.113.50"
	for i := 1; i <= perIP+1; i++ {
		junk := map[string]string{"x-service-key": fmt.Sprintf("ck_junk_%d", i), "x-service-secret": "x"}
		r := s.Do(t, "GET", "/v1/channel/events", from(attacker, junk), nil)
		if i <= perIP {
			expect(t, r, 401, "INVALID_CREDENTIALS")
		} else {
			expectLocked(t, r)
		}
	}
	tok, _ := s.Sessions.Mint("ch_a", "Ada", "ada@example.com", "", time.Now())
	session := map[string]string{"Authorization": "Bearer " + tok}
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from(attacker, keyed("b")), nil))
	expectLocked(t, s.Do(t, "GET", "/v1/channel/session", from(attacker, session), nil))
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from(attacker, nil), nil))
	// Other clients are not affected.
	expect(t, s.Do(t, "GET", "/v1/channel/session", from("198.51.100.7", session), nil), 200, "")
	expect(t, s.Do(t, "GET", "/v1/channel/events", keyed("b"), nil), 200, "")
	for _, k := range throttleKeys(t, s) {
		if strings.Contains(k, "authfail:key:") {
			t.Fatalf("an unknown key was counted: %s", k)
		}
	}
}

// TestForgedSessionsAreThrottledExpiredOnesAreNot: forged session tokens
// lock the IP; expired sessions ticketd signed are buyers coming back late,
// not guesses, and never lock their (possibly shared) address.
func TestForgedSessionsAreThrottledExpiredOnesAreNot(t *testing.T) {
	t.Parallel()
	s := startLowLimits(t)
	forged := map[string]string{"Authorization": "Bearer eyJpIjoiYSJ9.Zm9yZ2Vk"}
	for i := 1; i <= perIP+1; i++ {
		r := s.Do(t, "GET", "/v1/channel/session", from("203.0.113.60", forged), nil)
		if i <= perIP {
			expect(t, r, 401, "INVALID_SESSION")
		} else {
			expectLocked(t, r)
		}
	}
	old, _ := s.Sessions.Mint("ch_a", "Ada", "ada@example.com", "", time.Now().Add(-time.Hour))
	for i := 0; i < 2*perIP; i++ {
		r := s.Do(t, "GET", "/v1/channel/events", from("198.51.100.60", map[string]string{"Authorization": "Bearer " + old}), nil)
		expect(t, r, 401, "INVALID_SESSION")
	}
}

// TestSuccessfulAuthenticationCountsNothingInRedis: the hot path pays no
// Redis call for the lockout; only failures are counted.
func TestSuccessfulAuthenticationCountsNothingInRedis(t *testing.T) {
	t.Parallel()
	s := startBehindProxy(t)
	tok, _ := s.Sessions.Mint("ch_a", "Ada", "ada@example.com", "", time.Now())
	for i := 0; i < 20; i++ {
		expect(t, s.Do(t, "GET", "/v1/channel/events", keyed("a"), nil), 200, "")
		expect(t, s.Do(t, "GET", "/v1/channel/session", from("198.51.100.9", map[string]string{"Authorization": "Bearer " + tok}), nil), 200, "")
	}
	if ks := throttleKeys(t, s); len(ks) != 0 {
		t.Fatalf("successful calls wrote lockout keys: %v", ks)
	}
	// One failure is counted, which is what the check above looks for.
	expect(t, s.Do(t, "GET", "/v1/channel/events", from("198.51.100.10", wrongSecret("a")), nil), 401, "INVALID_CREDENTIALS")
	if ks := throttleKeys(t, s); len(ks) != 2 {
		t.Fatalf("one failure of a known key from a stranger: keys %v, want its IP and its key", ks)
	}
}

// TestNeighbourInTheSameSlash64DoesNotLockOutTheChannelsServer: an IPv6
// client is locked by its /64, which a cloud may share among tenants. A
// stranger there spending the /64's limit locks the /64 for strangers and
// sessions, never the channel's server on its key's allowlist (ch_a: ::1);
// that server's own failures still lock it.
func TestNeighbourInTheSameSlash64DoesNotLockOutTheChannelsServer(t *testing.T) {
	t.Parallel()
	s := startLowLimits(t)
	const neighbour, server = "::2", "::1"
	for i := 1; i <= perIP; i++ {
		junk := map[string]string{"x-service-key": fmt.Sprintf("ck_junk_%d", i), "x-service-secret": "x"}
		expect(t, s.Do(t, "GET", "/v1/channel/events", from(neighbour, junk), nil), 401, "INVALID_CREDENTIALS")
	}
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from(neighbour, wrongSecret("a")), nil))
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from(neighbour, keyed("a")), nil))
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from("::3", keyed("b")), nil))
	for i := 0; i < 3; i++ {
		expect(t, s.Do(t, "GET", "/v1/channel/events", from(server, keyed("a")), nil), 200, "")
	}
	// The server's own wrong secret finds the /64's count spent: it is
	// locked, the right secret too, while that lasts.
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from(server, wrongSecret("a")), nil))
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from(server, keyed("a")), nil))
}

// TestChannelOwningItsWholeSlash64IsLockedWithIt: a channel that
// allowlists a whole /64 says every address there is its own, so the
// /64's lock holds all of them: an address inside cannot step around it by
// presenting the key, and guesses of its secret from the range stay
// bounded by the /64's count however many addresses they come from.
func TestChannelOwningItsWholeSlash64IsLockedWithIt(t *testing.T) {
	t.Parallel()
	s := startLowLimits(t)
	s.Apply(t, []byte(`{"channels": [{"id": "ch_wide", "name": "Wide", "key": "ck_wide", "secret": "cs_wide_secret",
		"scopes": ["catalog:read"], "ipAllowlist": ["2001:db8:7::/64"], "settlement": "partner_remit"}]}`))
	for i := 1; i <= perIP; i++ {
		expect(t, s.Do(t, "GET", "/v1/channel/events", from(fmt.Sprintf("2001:db8:7::%x", i), wrongSecret("wide")), nil), 401, "INVALID_CREDENTIALS")
	}
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from("2001:db8:7::ff", wrongSecret("wide")), nil))
	expectLocked(t, s.Do(t, "GET", "/v1/channel/events", from("2001:db8:7::1:1", keyed("wide")), nil))
}
