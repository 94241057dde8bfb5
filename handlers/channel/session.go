package channel

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/httpx"
	"github.com/ticketd/ticketd/inventory/checkout"
)

// SessionCookie is the buyer session cookie of the embedded checkout.
const SessionCookie = "svc_session"

// SessionTTL is a buyer session's lifetime.
const SessionTTL = 30 * time.Minute

// Sessions mints and checks buyer sessions. A session is a signed token, so
// any node checks it without a Redis round trip; the signing secret is
// shared by every node through Redis (see cmd/ticketd).
type Sessions struct {
	Secret []byte
}

// Session is a buyer session: the channel that minted it and the buyer.
type Session struct {
	ID        string `json:"i"`
	ChannelID string `json:"c"`
	Name      string `json:"n"`
	Email     string `json:"e"`
	Phone     string `json:"p,omitempty"`
	Expires   int64  `json:"x"`
}

var b64 = base64.RawURLEncoding

// Mint returns a new session token for a buyer.
func (s *Sessions) Mint(channelID, name, email, phone string, now time.Time) (string, *Session) {
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	sess := &Session{ID: hex.EncodeToString(id), ChannelID: channelID, Name: name, Email: email, Phone: phone,
		Expires: now.Add(SessionTTL).Unix()}
	payload, _ := json.Marshal(sess)
	p := b64.EncodeToString(payload)
	return p + "." + b64.EncodeToString(s.mac([]byte(p))), sess
}

// Parse checks a token's signature and expiry.
func (s *Sessions) Parse(tok string, now time.Time) (*Session, bool) {
	if !s.signed(tok) {
		return nil, false
	}
	payload, err := b64.DecodeString(tok[:strings.IndexByte(tok, '.')])
	if err != nil {
		return nil, false
	}
	var sess Session
	if json.Unmarshal(payload, &sess) != nil || sess.ID == "" || now.Unix() >= sess.Expires {
		return nil, false
	}
	return &sess, true
}

// signed reports whether tok carries this secret's signature, expired or
// not.
func (s *Sessions) signed(tok string) bool {
	i := strings.IndexByte(tok, '.')
	if i <= 0 || len(tok) > 2048 {
		return false
	}
	sig, err := b64.DecodeString(tok[i+1:])
	return err == nil && hmac.Equal(sig, s.mac([]byte(tok[:i])))
}

// HoldToken is the seat-hold token a session owns for an event: derived, so
// every node finds the same one without storing it.
func (s *Sessions) HoldToken(sess *Session, eventID string) string {
	return "h" + hex.EncodeToString(s.mac([]byte("hold|" + sess.ID + "|" + eventID))[:16])
}

func (s *Sessions) mac(b []byte) []byte {
	m := hmac.New(sha256.New, s.Secret)
	m.Write(b)
	return m.Sum(nil)
}

// sessionToken reads the session from the Authorization bearer or the cookie.
func sessionToken(ctx *fasthttp.RequestCtx) string {
	if h := ctx.Request.Header.Peek("Authorization"); len(h) > 7 && bytes.EqualFold(h[:7], []byte("Bearer ")) {
		return string(bytes.TrimSpace(h[7:]))
	}
	return string(ctx.Request.Header.Cookie(SessionCookie))
}

type sessionBody struct {
	BuyerName  *string `json:"buyerName"`
	BuyerEmail *string `json:"buyerEmail"`
	BuyerPhone *string `json:"buyerPhone"`
}

func (a *API) createSession(ctx *fasthttp.RequestCtx, c *caller) {
	var body sessionBody
	if e := httpx.Decode(ctx, &body); e != nil {
		httpx.Fail(ctx, e)
		return
	}
	b, e := checkout.ValidateBuyer(checkout.PartnerFields, body.BuyerName, body.BuyerEmail, body.BuyerPhone)
	if e != nil {
		httpx.Fail(ctx, e)
		return
	}
	now := a.now()
	tok, sess := a.Sessions.Mint(c.Channel.ID, b.Name, b.Email, b.Phone, now)
	ck := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(ck)
	ck.SetKey(SessionCookie)
	ck.SetValue(tok)
	ck.SetPath("/")
	ck.SetHTTPOnly(true)
	ck.SetSecure(true)
	ck.SetSameSite(fasthttp.CookieSameSiteNoneMode)
	ck.SetMaxAge(int(SessionTTL.Seconds()))
	ctx.Response.Header.SetCookie(ck)
	httpx.OK(ctx, map[string]any{
		"sessionToken": tok,
		"expiresAt":    time.Unix(sess.Expires, 0).UTC().Format(time.RFC3339),
	})
}

func (a *API) resolveSession(ctx *fasthttp.RequestCtx, c *caller) {
	s := c.Session
	httpx.OK(ctx, map[string]any{
		"channelId":  s.ChannelID,
		"buyerName":  s.Name,
		"buyerEmail": s.Email,
		"buyerPhone": s.Phone,
		"expiresAt":  time.Unix(s.Expires, 0).UTC().Format(time.RFC3339),
	})
}
