package payments

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/eval"
	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/reply"
)

// Names of the built-in test processors.
const (
	Card   = "card"
	Wallet = "wallet"
)

// Statuses of a test processor's session.
const (
	StatusOpen      = "open"
	StatusPaid      = "paid"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
)

// DecliningCard is the test card number that is always declined.
const DecliningCard = "4000000000000002"

// Errors of Hosted.Pay.
var (
	// ErrCardDeclined: the declining test card; nothing was paid.
	ErrCardDeclined = errors.New("payments: the card was declined")
	// ErrCardInvalid: not a card number (12 to 19 digits passing the Luhn check).
	ErrCardInvalid = errors.New("payments: the card number is not valid")
	// ErrNotOpen: the session is paid, expired or cancelled, or unknown;
	// the returned session (Status) says which.
	ErrNotOpen = errors.New("payments: the checkout session is not open")
)

const (
	// sessionRetention keeps a session's page answering after its expiry.
	sessionRetention = 24 * time.Hour
	// paidRetention is how long a paid session's webhook is owed: a
	// delivery is retried until ticketd accepts it or this passes.
	paidRetention = 7 * 24 * time.Hour
	// firstDeliveryLease leaves the first delivery to Pay itself before the
	// loop may try it.
	firstDeliveryLease = 30 * time.Second
	deliveryTimeout    = 10 * time.Second
	retryBase          = time.Second
	retryMax           = 10 * time.Minute
	claimBatch         = 50
)

var (
	scriptOpen   = eval.Load("paysession_open")
	scriptPay    = eval.Load("paysession_pay")
	scriptClose  = eval.Load("paysession_close")
	scriptClaim  = eval.Load("paydue_claim")
	scriptRetry  = eval.Load("paydue_retry")
	scriptExtend = eval.Load("paydue_extend")
)

// HostedConfig configures a built-in test processor.
type HostedConfig struct {
	Redis rueidis.Client
	Space keys.Space
	// AppURL is the public base URL of ticketd's pages (TICKETD_APP_URL):
	// the hosted page is {AppURL}/pay/<name>/<sessionId>.
	AppURL string
	// WebhookBase is the base URL the processor posts its webhook to
	// ({WebhookBase}/v1/webhooks/<name>); "" means AppURL.
	WebhookBase string
	// Secret signs the webhooks (TICKETD_CARD_WEBHOOK_SECRET or
	// TICKETD_WALLET_WEBHOOK_SECRET).
	Secret string
	// HTTPClient sends the webhooks; nil means one with a 10 s timeout.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Hosted is a built-in test processor: the card processor or the wallet
// provider. Its sessions live in Redis; its page (handlers/pages) pays them,
// after which it delivers a signed webhook to ticketd over HTTP, as a real
// processor would, retrying with backoff until ticketd answers 2xx.
type Hosted struct {
	name       string
	prefix     string // of its session ids
	cfg        HostedConfig
	webhookURL string
	http       *http.Client
	log        *slog.Logger
	// lease keeps a claimed delivery from other nodes' loops; it is taken
	// again right before each send, so it need only outlast one send.
	lease time.Duration
}

// NewCard returns the built-in test card processor ("card").
func NewCard(cfg HostedConfig) *Hosted { return newHosted(Card, "cs", cfg) }

// NewWallet returns the built-in test wallet provider ("wallet").
func NewWallet(cfg HostedConfig) *Hosted { return newHosted(Wallet, "wp", cfg) }

func newHosted(name, prefix string, cfg HostedConfig) *Hosted {
	base := cfg.WebhookBase
	if base == "" {
		base = cfg.AppURL
	}
	h := &Hosted{
		name: name, prefix: prefix, cfg: cfg,
		webhookURL: strings.TrimRight(base, "/") + "/v1/webhooks/" + name,
		http:       cfg.HTTPClient,
		log:        cfg.Logger,
		lease:      deliveryTimeout + 5*time.Second,
	}
	if h.http == nil {
		h.http = &http.Client{Timeout: deliveryTimeout}
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}

// Name is "card" or "wallet".
func (h *Hosted) Name() string { return h.name }

// HostedSession is a test processor's checkout session as its page shows it.
type HostedSession struct {
	ID             string
	Processor      string
	RegistrationID string
	EventName      string
	Amount         money.Cents
	Currency       string
	// Items are the session's lines by name; a session opened before
	// items were stored has none, only Lines.
	Items      Items
	Lines      []orders.Line
	SuccessURL string
	CancelURL  string
	Status     string // one of the Status constants
	ExpiresAt  time.Time
}

// storedItem is an Item in a session hash, in integer cents: money.Cents
// encodes as a non-negative decimal, and a discount is negative.
type storedItem struct {
	Name      string `json:"name"`
	Quantity  int64  `json:"qty"`
	UnitPrice int64  `json:"unit"`
	Amount    int64  `json:"amt"`
}

func storeItems(items Items) []storedItem {
	out := make([]storedItem, len(items))
	for i, it := range items {
		out[i] = storedItem{Name: it.Name, Quantity: it.Quantity, UnitPrice: int64(it.UnitPrice), Amount: int64(it.Amount)}
	}
	return out
}

func loadItems(stored []storedItem) Items {
	out := make(Items, len(stored))
	for i, it := range stored {
		out[i] = Item{Name: it.Name, Quantity: it.Quantity, UnitPrice: money.Cents(it.UnitPrice), Amount: money.Cents(it.Amount)}
	}
	return out
}

// ReturnURL is where a paid session sends the buyer: SuccessURL with
// {CHECKOUT_SESSION_ID} replaced by the session id.
func (s HostedSession) ReturnURL() string {
	return strings.ReplaceAll(s.SuccessURL, "{CHECKOUT_SESSION_ID}", s.ID)
}

// CreateSession opens a session for req and returns its hosted page.
func (h *Hosted) CreateSession(ctx context.Context, req CheckoutRequest) (Session, error) {
	p, err := h.PrepareSession(req)
	if err != nil {
		return Session{}, err
	}
	exp, keep, _ := strings.Cut(p.Expiry, " ")
	arr, err := eval.Array(ctx, h.cfg.Redis, scriptOpen, []string{p.Key}, append([]string{exp, keep}, p.Fields...))
	if err != nil {
		return Session{}, h.storeFailed("open session", err)
	}
	if code, err := reply.Of(arr); err != nil || code != reply.OK {
		return Session{}, fmt.Errorf("payments: %s: open session: id collision or bad reply (%v, %v)", h.name, code, err)
	}
	return p.Session, nil
}

// Prepared is a built-in processor's session made ready to open: the
// script that attaches it to its registration writes it
// (registrations.Service.OpenCheckout), so opening and attaching are one
// step.
type Prepared struct {
	Session Session
	// Key is the session's hash, in its registration's slot.
	Key string
	// Expiry is "<expiry, unix ms> <retention after it, ms>".
	Expiry string
	// Fields are the session hash's field, value pairs.
	Fields []string
}

// PrepareSession makes a session for req ready to open, without I/O.
func (h *Hosted) PrepareSession(req CheckoutRequest) (Prepared, error) {
	if _, ok := keys.OrderEvent(req.RegistrationID); !ok {
		return Prepared{}, fmt.Errorf("payments: %s: registration id %q is not an order id", h.name, req.RegistrationID)
	}
	if req.ExpiresAt.IsZero() {
		return Prepared{}, fmt.Errorf("payments: %s: checkout request without an expiry", h.name)
	}
	lines, err := json.Marshal(req.Lines)
	if err != nil {
		return Prepared{}, fmt.Errorf("payments: %s: encode lines: %w", h.name, err)
	}
	items, err := json.Marshal(storeItems(req.Items))
	if err != nil {
		return Prepared{}, fmt.Errorf("payments: %s: encode items: %w", h.name, err)
	}
	id := h.prefix + "_" + randomHex(12) + "_" + req.RegistrationID
	key, _ := h.cfg.Space.PaySession(id)
	cur := req.Currency
	if cur == "" {
		cur = "USD"
	}
	return Prepared{
		Session: Session{ID: id, URL: strings.TrimRight(h.cfg.AppURL, "/") + "/pay/" + h.name + "/" + id},
		Key:     key,
		Expiry:  strconv.FormatInt(req.ExpiresAt.UnixMilli(), 10) + " " + strconv.FormatInt(sessionRetention.Milliseconds(), 10),
		Fields: []string{
			"proc", h.name,
			"reg", req.RegistrationID,
			"amt", strconv.FormatInt(int64(req.Amount), 10),
			"cur", strings.ToUpper(cur),
			"evn", req.EventName,
			"lines", string(lines),
			"items", string(items),
			"ok", req.SuccessURL,
			"cancel", req.CancelURL,
		},
	}, nil
}

// SessionKey is the hash of one of h's sessions; ok is false when id is
// not one of its session ids.
func (h *Hosted) SessionKey(sessionID string) (key string, ok bool) { return h.sessionKey(sessionID) }

// Expire closes an open session; paid reports that it had been paid. An
// unknown session (never opened, or long gone) was not paid.
func (h *Hosted) Expire(ctx context.Context, sessionID string) (paid bool, err error) {
	st, err := h.close(ctx, sessionID, StatusExpired)
	return st == StatusPaid, err
}

// Cancel closes an open session because the buyer cancelled on its page.
// It returns the session as it is afterwards (a paid one stays paid).
func (h *Hosted) Cancel(ctx context.Context, sessionID string) (HostedSession, bool, error) {
	if _, err := h.close(ctx, sessionID, StatusCancelled); err != nil {
		return HostedSession{}, false, err
	}
	return h.Get(ctx, sessionID)
}

func (h *Hosted) close(ctx context.Context, sessionID, status string) (string, error) {
	key, ok := h.sessionKey(sessionID)
	if !ok {
		return "", nil
	}
	arr, err := eval.Array(ctx, h.cfg.Redis, scriptClose, []string{key}, []string{status})
	if err != nil {
		return "", h.storeFailed("close session", err)
	}
	if code, err := reply.Of(arr); err != nil || code != reply.OK {
		return "", err
	}
	return eval.Str(arr, 1)
}

// storeFailed is a failure of the Redis the built-in processors keep their
// sessions in: ticketd's own Redis, not a processor's server. It carries
// the 503 SERVICE_UNAVAILABLE that every call answers while Redis does not
// (the storefront passes a processor's apierr through), not the 502
// PAYMENT_PROCESSOR_ERROR of a processor that failed.
func (h *Hosted) storeFailed(op string, err error) error {
	return fmt.Errorf("payments: %s: %s: %w: %w", h.name, op, apierr.Unavailable("temporarily unavailable, retry"), err)
}

// sessionKey is the Redis key of one of this processor's sessions; ok is
// false for an id this processor never made.
func (h *Hosted) sessionKey(sessionID string) (string, bool) {
	if !strings.HasPrefix(sessionID, h.prefix+"_") {
		return "", false
	}
	return h.cfg.Space.PaySession(sessionID)
}

// Get reads a session; found is false when the processor does not know it.
func (h *Hosted) Get(ctx context.Context, sessionID string) (s HostedSession, found bool, err error) {
	s, _, found, err = h.get(ctx, sessionID)
	return s, found, err
}

// get is Get that also returns the session's webhook event id (evt, set
// once paid) from the same read.
func (h *Hosted) get(ctx context.Context, sessionID string) (s HostedSession, evt string, found bool, err error) {
	key, ok := h.sessionKey(sessionID)
	if !ok {
		return HostedSession{}, "", false, nil
	}
	m, err := h.cfg.Redis.Do(ctx, h.cfg.Redis.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		return HostedSession{}, "", false, fmt.Errorf("payments: %s: read session: %w", h.name, err)
	}
	if m["st"] == "" || m["proc"] != h.name {
		return HostedSession{}, "", false, nil
	}
	s, err = h.sessionOf(sessionID, m)
	if err != nil {
		return HostedSession{}, "", false, err
	}
	return s, m["evt"], true, nil
}

// sessionOf is the session a session hash's fields (m) hold.
func (h *Hosted) sessionOf(sessionID string, m map[string]string) (HostedSession, error) {
	amt, _ := strconv.ParseInt(m["amt"], 10, 64)
	exp, _ := strconv.ParseInt(m["exp"], 10, 64)
	s := HostedSession{
		ID: sessionID, Processor: m["proc"], RegistrationID: m["reg"], EventName: m["evn"],
		Amount: money.Cents(amt), Currency: m["cur"], SuccessURL: m["ok"], CancelURL: m["cancel"],
		Status: m["st"], ExpiresAt: time.UnixMilli(exp),
	}
	if err := json.Unmarshal([]byte(m["lines"]), &s.Lines); err != nil {
		return HostedSession{}, fmt.Errorf("payments: %s: session lines: %w", h.name, err)
	}
	if v := m["items"]; v != "" { // absent in a session opened before items
		var stored []storedItem
		if err := json.Unmarshal([]byte(v), &stored); err != nil {
			return HostedSession{}, fmt.Errorf("payments: %s: session items: %w", h.name, err)
		}
		s.Items = loadItems(stored)
	}
	return s, nil
}

// Pay pays an open session with a test card (the wallet ignores card):
// in one atomic step the session becomes paid and its webhook owed; the
// webhook is then delivered at once, and by the delivery loop (Run) until
// ticketd accepts it if this first attempt fails. Paying a paid session
// again changes nothing. Errors: ErrCardInvalid, ErrCardDeclined (nothing
// paid), ErrNotOpen (the returned session's Status says why; found is
// false for an unknown session). The card is judged here, but answered
// only for an open session: a paid or closed one says so whatever the
// card. One script reads and pays the session and answers it, and the
// first delivery sends what it answered: two Redis round trips with the
// delivery's mark (design rule 7).
func (h *Hosted) Pay(ctx context.Context, sessionID, card string) (s HostedSession, found bool, err error) {
	key, ok := h.sessionKey(sessionID)
	if !ok {
		return HostedSession{}, false, ErrNotOpen
	}
	refusal := ""
	if h.name == Card {
		number := strings.Map(func(r rune) rune {
			if r == ' ' || r == '-' {
				return -1
			}
			return r
		}, card)
		switch {
		case !luhn(number):
			refusal = "invalid"
		case number == DecliningCard:
			refusal = "declined"
		}
	}
	due := h.dueKey(sessionID)
	evt := "evt_" + randomHex(12)
	arr, err := eval.Array(ctx, h.cfg.Redis, scriptPay, []string{key, due}, []string{
		sessionID, evt,
		strconv.FormatInt(paidRetention.Milliseconds(), 10),
		strconv.FormatInt(firstDeliveryLease.Milliseconds(), 10),
		h.name, refusal,
	})
	if err != nil {
		return HostedSession{}, false, fmt.Errorf("payments: %s: pay session: %w", h.name, err)
	}
	code, err := reply.Of(arr)
	if err != nil {
		return HostedSession{}, false, err
	}
	v, err := eval.Str(arr, 1)
	if err != nil {
		return HostedSession{}, false, err
	}
	if code == reply.Unpayable && v == "missing" {
		return HostedSession{}, false, ErrNotOpen
	}
	if len(arr) < 3 {
		return HostedSession{}, false, fmt.Errorf("payments: %s: pay session: a reply of %d elements, want 3", h.name, len(arr))
	}
	m, err := arr[2].AsStrMap()
	if err != nil {
		return HostedSession{}, false, fmt.Errorf("payments: %s: pay session: %w", h.name, err)
	}
	if s, err = h.sessionOf(sessionID, m); err != nil {
		return HostedSession{}, false, err
	}
	switch code {
	case reply.OK:
		// Delivered now so the buyer usually comes back to a confirmed
		// registration; a failure is left to the loop, the payment stands.
		h.send(ctx, key, due, s, v)
		return s, true, nil
	case reply.Exists:
		return s, true, nil
	case reply.PaymentRefused:
		if v == "declined" {
			return s, true, ErrCardDeclined
		}
		return s, true, ErrCardInvalid
	}
	return s, true, ErrNotOpen
}

// dueKey is the due set of a session's partition.
func (h *Hosted) dueKey(sessionID string) string {
	reg, _ := keys.SessionRegistration(sessionID)
	ev, _ := keys.OrderEvent(reg)
	return h.cfg.Space.PayDue(keys.Partition(ev), h.name)
}

// Run delivers owed webhooks until ctx ends: every tick it takes the due
// deliveries of every partition (a delivery a restarted or dead node owed
// included) and sends them. Every node may run it; a claimed delivery is
// leased to one node at a time.
func (h *Hosted) Run(ctx context.Context, tick time.Duration) {
	if tick <= 0 {
		tick = time.Second
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		h.DeliverDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeliverDue sends every webhook that is due now, once; it returns how many
// it attempted. The claims of all partitions go to Redis in one round trip.
// A batch may take far longer than a lease (each send may take
// deliveryTimeout), so each delivery's lease is taken again right before
// it is sent; one another node has taken meanwhile is left to it.
func (h *Hosted) DeliverDue(ctx context.Context) int {
	lease := strconv.FormatInt(h.lease.Milliseconds(), 10)
	batch := strconv.Itoa(claimBatch)
	parts := h.duePartitions(ctx)
	claims := make([]eval.Pipelined, len(parts))
	cmds := make(rueidis.Commands, len(parts))
	for i, p := range parts {
		claims[i] = eval.Pipeline(h.cfg.Redis, scriptClaim, []string{h.cfg.Space.PayDue(p, h.name)}, []string{batch, lease})
		cmds[i] = claims[i].Cmd
	}
	n := 0
	for i, res := range h.cfg.Redis.DoMulti(ctx, cmds...) {
		p := parts[i]
		arr, err := claims[i].Reply(ctx, res)
		var ids []string
		var until int64
		if err == nil {
			ids, err = eval.Strs(arr, 1)
		}
		if err == nil && len(ids) > 0 {
			until, err = eval.Int(arr, 2)
		}
		if err != nil {
			h.log.Warn("payments: claim due webhooks", "processor", h.name, "err", err)
			continue
		}
		due := h.cfg.Space.PayDue(p, h.name)
		for _, id := range ids {
			if ctx.Err() != nil {
				return n // the rest stay leased, then due again
			}
			arr, err := eval.Array(ctx, h.cfg.Redis, scriptExtend, []string{due}, []string{id, strconv.FormatInt(until, 10), lease})
			var held reply.Code
			if err == nil {
				held, err = reply.Of(arr)
			}
			if err != nil {
				h.log.Warn("payments: extend webhook lease", "processor", h.name, "err", err)
				continue // still leased, then due again
			}
			if held != reply.OK {
				continue // delivered, rescheduled or taken by another node
			}
			h.deliver(ctx, id)
			n++
		}
	}
	return n
}

// dueSkew is how far ahead of this node's clock duePartitions looks, so a
// Redis clock ahead of it by as much misses no delivery.
const dueSkew = 5 * time.Second

// duePartitions is the partitions whose due set holds a delivery due by
// now (and dueSkew): one plain read of each set's first entry, in one
// round trip. Most ticks find none, and a claim is a script call per
// partition (64 a second per processor and node, most of an idle node's
// Redis time); a partition whose read failed is claimed, so the claim
// reports the failure.
func (h *Hosted) duePartitions(ctx context.Context) []int {
	by := strconv.FormatInt(time.Now().Add(dueSkew).UnixMilli(), 10)
	cmds := make(rueidis.Commands, keys.Partitions)
	for p := range keys.Partitions {
		cmds[p] = h.cfg.Redis.B().Zrange().Key(h.cfg.Space.PayDue(p, h.name)).Min("-inf").Max(by).Byscore().Limit(0, 1).Build()
	}
	var parts []int
	for p, res := range h.cfg.Redis.DoMulti(ctx, cmds...) {
		if ids, err := res.AsStrSlice(); err != nil || len(ids) > 0 {
			parts = append(parts, p)
		}
	}
	return parts
}

// deliver makes one delivery attempt of a paid session's webhook: done, it
// leaves the due set; failed, it is scheduled again with backoff.
func (h *Hosted) deliver(ctx context.Context, sessionID string) {
	key, ok := h.sessionKey(sessionID)
	if !ok {
		return
	}
	due := h.dueKey(sessionID)
	s, evt, found, err := h.get(ctx, sessionID)
	if err != nil {
		h.log.Warn("payments: read session for webhook", "processor", h.name, "err", err)
		return // still due: the loop tries again when the lease ends
	}
	if !found {
		h.abandoned(sessionID)
		h.cfg.Redis.Do(ctx, h.cfg.Redis.B().Zrem().Key(due).Member(sessionID).Build())
		return
	}
	if evt == "" { // not paid: nothing is owed yet
		// Not the session's id: an unpaid one pays its page. Its
		// registration says where to look.
		reg, _ := keys.SessionRegistration(sessionID)
		h.log.Warn("payments: webhook due for a session not paid", "processor", h.name, "registration", reg)
		return
	}
	h.send(ctx, key, due, s, evt)
}

// send posts paid session s's webhook (event evt) and marks it delivered
// in its due set; a failed post is retried by the loop, with backoff.
func (h *Hosted) send(ctx context.Context, key, due string, s HostedSession, evt string) {
	body, err := h.webhookBody(evt, s)
	if err == nil {
		err = h.post(ctx, body)
	}
	if err == nil {
		if err := h.cfg.Redis.Do(ctx, h.cfg.Redis.B().Zrem().Key(due).Member(s.ID).Build()).Error(); err != nil {
			h.log.Warn("payments: mark webhook delivered", "processor", h.name, "err", err)
		}
		return
	}
	arr, rerr := eval.Array(ctx, h.cfg.Redis, scriptRetry, []string{key, due}, []string{
		s.ID, strconv.FormatInt(retryBase.Milliseconds(), 10), strconv.FormatInt(retryMax.Milliseconds(), 10),
	})
	if rerr == nil && reply.Is(arr, reply.NotFound) {
		h.abandoned(s.ID)
		return
	}
	att, _ := eval.Int(arr, 1)
	h.log.Warn("payments: webhook delivery failed; will retry", "processor", h.name, "session", s.ID, "attempts", att, "err", err, "scheduleErr", rerr)
}

// abandoned records a delivery given up: its session is gone (its retention
// passed without ticketd accepting the webhook), so a payment may never
// have been booked. An operator must look: the ids say where.
func (h *Hosted) abandoned(sessionID string) {
	reg, _ := keys.SessionRegistration(sessionID)
	h.log.Error("payments: webhook delivery abandoned: the session expired before ticketd accepted it",
		"processor", h.name, "session", sessionID, "registration", reg)
}

// webhookBody is the webhook of a paid session (decisions.md section 4).
// It is the same bytes on every attempt; only the signature's time moves.
func (h *Hosted) webhookBody(evt string, s HostedSession) ([]byte, error) {
	if h.name == Wallet {
		// The wallet's notification is about its payment: its id is the
		// payment's, one COMPLETED notification per payment.
		return json.Marshal(WalletWebhook{ID: s.ID, Status: "COMPLETED", Amount: s.Amount, Currency: s.Currency, Reference: s.RegistrationID})
	}
	var w CardWebhook
	w.ID = evt
	w.Type = EventCheckoutCompleted
	w.Data.Object = CardSession{ID: s.ID, PaymentStatus: "paid", AmountTotal: int64(s.Amount), Currency: strings.ToLower(s.Currency), ClientReferenceID: s.RegistrationID}
	return json.Marshal(w)
}

func (h *Hosted) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.webhookURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(h.cfg.Secret, time.Now(), body))
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook answered %d", resp.StatusCode)
	}
	return nil
}

// luhn reports whether s is 12 to 19 digits with a valid check digit.
func luhn(s string) bool {
	if len(s) < 12 || len(s) > 19 {
		return false
	}
	sum := 0
	for i := 0; i < len(s); i++ {
		c := s[len(s)-1-i]
		if c < '0' || c > '9' {
			return false
		}
		d := int(c - '0')
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
