package scenario

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"

	"github.com/ticketd/ticketd/bench/api"
	"github.com/ticketd/ticketd/bench/load"
	"github.com/ticketd/ticketd/inventory/money"
)

// partner is one worker's keyed partner client on the hot path: requests
// built into reused buffers, answers scanned for the two fields it needs,
// the confirm signed with a reused HMAC. It allocates next to nothing per
// call, so the load generator leaves the cores to the server.
type partner struct {
	ch   channel
	sign *signer
	// idem is the Idempotency-Key: a per-worker prefix and a counter.
	idem    []byte
	idemLen int
	n       uint64
	ref     string
	order   []byte // the last reserved order id
	amount  money.Cents
	amt     []byte // the amount, two decimals
	body    []byte
	sig     []byte
}

// newPartner is worker's client of ch. Idempotency keys are unique per
// channel and worker, and channels per run.
func newPartner(ch channel, worker int) *partner {
	p := &partner{ch: ch, sign: newSigner(ch.Signing), ref: "bench-" + ch.ID + "-" + strconv.Itoa(worker)}
	p.idem = append(p.idem, ch.ID...)
	p.idem = append(p.idem, '-')
	p.idem = strconv.AppendInt(p.idem, int64(worker), 10)
	p.idem = append(p.idem, '-')
	p.idemLen = len(p.idem)
	return p
}

// keyed sets up w.Req as a keyed JSON call of the partner's channel.
func (p *partner) keyed(w *load.Worker, method, path string) { keyed(w, p.ch.Key, method, path) }

// keyed sets up w.Req as a JSON call with a channel's key and secret.
func keyed(w *load.Worker, key api.Key, method, path string) {
	w.Prepare(method, path)
	h := &w.Req.Header
	h.Set("x-service-key", key.Key)
	h.Set("x-service-secret", key.Secret)
	h.SetContentType("application/json")
}

// nextKey returns a fresh Idempotency-Key.
func (p *partner) nextKey() []byte {
	p.n++
	p.idem = strconv.AppendUint(p.idem[:p.idemLen], p.n, 10)
	return p.idem
}

// reserve sends w.Req with a fresh Idempotency-Key when idem is set, and
// keeps the order id and amount of a successful reserve. ok is true for a
// 2xx answer with both fields.
func (p *partner) reserve(w *load.Worker, body []byte, idem bool) (status int, transport string, ok bool) {
	if idem {
		w.Req.Header.SetBytesV("Idempotency-Key", p.nextKey())
	}
	w.Req.SetBodyRaw(body)
	status, transport = w.Send()
	if transport != "" || status != 200 {
		return status, transport, false
	}
	b := w.Resp.Body()
	id := load.Field(b, `"orderId":`)
	amount, okAmount := parseCents(load.Field(b, `"amount":`))
	if len(id) == 0 || !okAmount {
		return status, "", false
	}
	p.order = append(p.order[:0], id...)
	p.amount = amount
	return status, "", true
}

// confirm sends the signed confirm of the last reserved order.
func (p *partner) confirm(w *load.Worker) (status int, transport string) {
	p.keyed(w, "POST", "/v1/channel/orders/confirm")
	p.amt = p.amount.Append(p.amt[:0])
	amount := p.amt
	p.sig = p.sign.sign(p.sig[:0], p.order, amount, p.ref)
	w.Req.Header.SetBytesV("x-service-signature", p.sig)
	b := append(p.body[:0], `{"orderId":"`...)
	b = append(b, p.order...)
	b = append(b, `","amount":`...)
	b = append(b, amount...)
	b = append(b, `,"partnerReference":"`...)
	b = append(b, p.ref...)
	b = append(b, `"}`...)
	p.body = b
	w.Req.SetBodyRaw(b)
	return w.Send()
}

// signer computes confirm signatures (channel.Signature) with one reused
// HMAC state.
type signer struct {
	mac hash.Hash
	msg []byte
	sum []byte
}

func newSigner(key string) *signer { return &signer{mac: hmac.New(sha256.New, []byte(key))} }

// sign appends the lowercase hex HMAC-SHA256 over
// "orderId.amount.USD.partnerReference" to dst.
func (s *signer) sign(dst, orderID, amount []byte, ref string) []byte {
	s.msg = append(s.msg[:0], orderID...)
	s.msg = append(s.msg, '.')
	s.msg = append(s.msg, amount...)
	s.msg = append(s.msg, ".USD."...)
	s.msg = append(s.msg, ref...)
	s.mac.Reset()
	s.mac.Write(s.msg)
	s.sum = s.mac.Sum(s.sum[:0])
	return hex.AppendEncode(dst, s.sum)
}

// parseCents reads a JSON amount with at most two decimals ("26.5",
// "26.50", "26") into cents, without floats.
func parseCents(b []byte) (money.Cents, bool) {
	var whole, frac int64
	decimals := -1
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		switch {
		case c == '.' && decimals < 0:
			decimals = 0
		case c >= '0' && c <= '9' && decimals < 0:
			whole = whole*10 + int64(c-'0')
		case c >= '0' && c <= '9' && decimals < 2:
			frac = frac*10 + int64(c-'0')
			decimals++
		default:
			return 0, false
		}
	}
	if decimals == 1 {
		frac *= 10
	}
	return money.Cents(whole*100 + frac), true
}
