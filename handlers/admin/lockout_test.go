package admin_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// TestWrongAdminTokensAreThrottled: wrong tokens lock the client IP out
// (429 with Retry-After, the right token too, until the window allows);
// the operator at another address is not locked out, and requests without
// a token are no guesses and are not counted.
func TestWrongAdminTokensAreThrottled(t *testing.T) {
	t.Parallel()
	// 10 a minute: a lock lasts 6 s after the last failure, so the checks
	// below find it on a slow machine, and the wait for its end is short.
	const perIP = 10
	s := servertest.Start(t, servertest.Options{Trusted: "127.0.0.1/32", LockoutPerIP: perIP})
	as := func(ip, token string) *servertest.Response {
		h := map[string]string{"X-Forwarded-For": ip}
		if token != "" {
			h["Authorization"] = "Bearer " + token
		}
		return s.Do(t, "PUT", "/v1/admin/catalog", h, []byte(doc))
	}
	const attacker, operator = "203.0.113.70", "198.51.100.70"
	start := time.Now()
	for i := 1; i <= perIP+1; i++ {
		r := as(attacker, "wrong")
		if i <= perIP {
			if r.Status != 401 || r.Code != "ADMIN_UNAUTHORIZED" {
				t.Fatalf("attempt %d: %s", i, r)
			}
			continue
		}
		expectLocked(t, r)
	}
	// The right token from the locked IP is refused too: the bucket was
	// full at start, so the lock lasts at least one interval from there.
	if r := as(attacker, servertest.AdminToken); r.Status != 200 || time.Since(start) < time.Minute/perIP {
		expectLocked(t, r)
	}
	if r := as(operator, servertest.AdminToken); r.Status != 200 {
		t.Fatalf("the operator elsewhere: %s", r)
	}
	for i := 0; i < 2*perIP; i++ {
		if r := as(operator, ""); r.Status != 401 || r.Code != "ADMIN_UNAUTHORIZED" {
			t.Fatalf("request %d without a token: %s", i, r)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for as(attacker, servertest.AdminToken).Status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the right token is still refused 30 s after the lock")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func expectLocked(t *testing.T, r *servertest.Response) {
	t.Helper()
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.Status != 429 || r.Code != "RATE_LIMITED" || err != nil || secs < 1 || r.Raw["retryAfter"] != float64(secs) {
		t.Fatalf("want 429 RATE_LIMITED with Retry-After and retryAfter, got %s (Retry-After %q)", r, r.Header.Get("Retry-After"))
	}
}
