package picker

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// TokenHeader carries the page's token on every call of the picker API.
const TokenHeader = "x-picker-token"

// TokenTTL is how long a page's token is good: a buyer picks seats within
// minutes; one who left the page open longer reloads it.
const TokenTTL = 2 * time.Hour

// Sign returns the picker token of an event of a tenant, good until exp:
// "<eventId>:<tenantId>:<exp, unix seconds>:<mac>", mac the unpadded
// base64url HMAC-SHA256 under key of everything before it. Ids never
// contain ':' (catalog ids are A-Z a-z 0-9 _ . -).
func Sign(key []byte, eventID, tenantID string, exp time.Time) string {
	msg := eventID + ":" + tenantID + ":" + strconv.FormatInt(exp.Unix(), 10)
	return msg + ":" + mac(key, msg)
}

func mac(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify returns the event and tenant of a token signed under key and
// not expired at now; ok is false for anything else. The MAC is compared
// in constant time.
func verify(key []byte, tok string, now time.Time) (eventID, tenantID string, ok bool) {
	if len(tok) > 256 {
		return "", "", false
	}
	i := strings.LastIndexByte(tok, ':')
	if i < 0 {
		return "", "", false
	}
	msg, sum := tok[:i], tok[i+1:]
	if !hmac.Equal([]byte(sum), []byte(mac(key, msg))) {
		return "", "", false
	}
	parts := strings.Split(msg, ":")
	if len(parts) != 3 {
		return "", "", false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || now.Unix() >= exp {
		return "", "", false
	}
	return parts[0], parts[1], true
}
