package browsertest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The harness reaches a test server under a mapped host name, runs its
// script, and writes a screenshot.
func TestBrowserReachesMappedHostAndShoots(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>hi</title><p id="host">` + r.Host + `</p>`))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	ctx := Timeout(t, New(t, Options{Hosts: []string{"shop.example.test"}}), 30*time.Second)
	if err := chromedp.Do(ctx, Phone, chromedp.Navigate("http://shop.example.test"+port+"/")); err != nil {
		t.Fatal(err)
	}
	host, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("host")))
	if err != nil || host != "shop.example.test"+port {
		t.Fatalf("page saw host %q (%v)", host, err)
	}
	p := Shot(t, ctx, "mapped")
	if st, err := os.Stat(p); err != nil || st.Size() == 0 {
		t.Fatalf("screenshot %s: %v", p, err)
	}
}
