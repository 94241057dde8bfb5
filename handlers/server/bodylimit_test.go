package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/ticketd/ticketd/handlers/admin"
)

const testToken = "admin-token-for-body-limit"

// quiet takes the log line of each refused body.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func adminServer(t *testing.T) string {
	t.Helper()
	// The catalog store is never reached: every body here is refused
	// before it is applied.
	return serve(t, New(Handler(nil, &admin.API{Token: testToken}), AdminToken(testToken), Logger(quiet)))
}

// No body over 64 KB is read before the caller is authenticated: the 413
// comes back while the client has sent the headers only.
func TestBodyOver64KBIsRefusedUnreadWithoutTheAdminToken(t *testing.T) {
	addr := adminServer(t)
	const mb = 1 << 20
	for _, tc := range []struct{ name, method, path, auth string }{
		{"catalog without a token", "PUT", "/v1/admin/catalog", ""},
		{"catalog with a wrong token", "PUT", "/v1/admin/catalog", "Bearer wrong-token"},
		{"catalog with the token unprefixed", "PUT", "/v1/admin/catalog", testToken},
		{"catalog with a token that extends the right one", "PUT", "/v1/admin/catalog", "Bearer " + testToken + "x"},
		{"another admin path", "PUT", "/v1/admin/anything", ""},
		{"another admin path with the token", "PUT", "/v1/admin/anything", "Bearer " + testToken},
		{"catalog by POST with the token", "POST", "/v1/admin/catalog", "Bearer " + testToken},
		{"a partner route", "POST", "/v1/channel/orders/confirm", "Bearer " + testToken},
	} {
		head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", tc.method, tc.path, mb)
		if tc.auth != "" {
			head += "Authorization: " + tc.auth + "\r\n"
		}
		// Headers only: the body never comes unless the server waits for it.
		r := roundTrip(t, addr, head+"\r\n", nil)
		if r.Status != 413 || r.Code != "PAYLOAD_TOO_LARGE" {
			t.Errorf("%s: %d %s, want 413 PAYLOAD_TOO_LARGE before the body", tc.name, r.Status, r.Body)
		}
	}
}

// The operator's catalog, with the valid token, may exceed 64 KB: a 1 MB
// document reaches the catalog validation (here refused as invalid, which
// is not 413). Beyond the admin limit it is 413 too, unread.
func TestAuthenticatedCatalogTakesTheAdminLimit(t *testing.T) {
	addr := adminServer(t)
	body := []byte(`{"tenants": "` + string(bytes.Repeat([]byte("a"), 1<<20)) + `"}`)
	head := fmt.Sprintf("PUT /v1/admin/catalog HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", testToken, len(body))
	if r := roundTrip(t, addr, head, body); r.Status != 400 || r.Code != "INVALID_CATALOG" {
		t.Fatalf("authenticated 1 MB catalog: %d %.200s, want 400 INVALID_CATALOG", r.Status, r.Body)
	}
	head = fmt.Sprintf("PUT /v1/admin/catalog?dry=1 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", testToken, admin.MaxCatalogBody+1)
	if r := roundTrip(t, addr, head, nil); r.Status != 413 || r.Code != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("authenticated catalog over the admin limit: %d %s, want 413", r.Status, r.Body)
	}
}

// With the admin surface off, no token unlocks anything.
func TestNoAdminTokenMeansNoLargeBody(t *testing.T) {
	addr := serve(t, New(Handler(nil, &admin.API{}), Logger(quiet)))
	head := "PUT /v1/admin/catalog HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \r\nContent-Length: 100000\r\n\r\n"
	if r := roundTrip(t, addr, head, nil); r.Status != 413 {
		t.Fatalf("admin off, empty bearer: %d %s, want 413", r.Status, r.Body)
	}
}
