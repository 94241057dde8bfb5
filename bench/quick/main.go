// Command quick is a small closed-loop load of partner reserve+confirm pairs
// against a running ticketd, for a first throughput figure. The full bench
// suite (open loop, HDR histograms, baselines, integrity) is bench/'s job.
//
//	go run ./bench/quick -url http://127.0.0.1:8080 -token $TICKETD_ADMIN_TOKEN -c 64 -d 10s
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/channel"
	"github.com/ticketd/ticketd/inventory/money"
)

const catalogDoc = `{"tenants":[{"id":"t_quick","name":"Quick","notifyEmail":"","publishableKeys":[],
 "events":[{"id":"ev_quick","shortId":"quick","slug":"quick","name":"Quick","startsAt":"2030-01-01T00:00:00Z",
  "status":"on_sale","storefront":false,"channels":["ch_quick"],
  "tickets":[{"id":"tk","name":"T","price":25,"capacity":100000000}]}]}],
 "channels":[{"id":"ch_quick","name":"Quick","key":"ck_quick","secret":"cs_quick_secret","signingKey":"sk_quick",
  "scopes":["catalog:read","orders:write","orders:confirm","orders:read","sessions:write"],
  "ipAllowlist":["127.0.0.1/32","::1/128"],"settlement":"partner_remit",
  "rateLimits":{"catalog":100000000,"status":100000000,"checkout":100000000,"confirm":100000000,"session":100000000}}]}`

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "ticketd base URL")
	token := flag.String("token", os.Getenv("TICKETD_ADMIN_TOKEN"), "admin token, to apply the load catalog")
	conc := flag.Int("c", 64, "concurrent buyers")
	dur := flag.Duration("d", 10*time.Second, "duration")
	flag.Parse()

	cl := &fasthttp.Client{MaxConnsPerHost: *conc * 2}
	if code, body := do(cl, "PUT", *url+"/v1/admin/catalog", map[string]string{"Authorization": "Bearer " + *token}, []byte(catalogDoc)); code != 200 {
		fmt.Fprintf(os.Stderr, "apply catalog: %d %s\n", code, body)
		os.Exit(1)
	}
	var pairs, errs atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	stop := time.Now().Add(*dur)
	var wg sync.WaitGroup
	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h := map[string]string{"x-service-key": "ck_quick", "x-service-secret": "cs_quick_secret"}
			var mine []time.Duration
			for i := 0; time.Now().Before(stop); i++ {
				t0 := time.Now()
				h["Idempotency-Key"] = fmt.Sprintf("q-%d-%d-%d", t0.UnixNano(), w, i)
				code, body := do(cl, "POST", *url+"/v1/channel/events/ev_quick/checkout", h,
					[]byte(`{"buyerName":"Load","buyerEmail":"load@example.com","selectedTicketId":"tk"}`))
				var r struct {
					Data struct {
						OrderID string      `json:"orderId"`
						Amount  money.Cents `json:"amount"`
					} `json:"data"`
				}
				if code != 200 || json.Unmarshal(body, &r) != nil {
					errs.Add(1)
					continue
				}
				delete(h, "Idempotency-Key")
				h["x-service-signature"] = channel.Signature("sk_quick", r.Data.OrderID, r.Data.Amount, "q")
				code, _ = do(cl, "POST", *url+"/v1/channel/orders/confirm", h,
					[]byte(fmt.Sprintf(`{"orderId":%q,"amount":%s,"partnerReference":"q"}`, r.Data.OrderID, r.Data.Amount)))
				delete(h, "x-service-signature")
				if code != 200 {
					errs.Add(1)
					continue
				}
				pairs.Add(1)
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(float64(len(lat)-1)*p)]
	}
	fmt.Printf("pairs/s %.0f (requests/s %.0f)  errors %d  pair latency p50 %v p99 %v (closed loop, %d buyers, %v)\n",
		float64(pairs.Load())/dur.Seconds(), 2*float64(pairs.Load())/dur.Seconds(), errs.Load(), pct(0.5), pct(0.99), *conc, *dur)
}

func do(cl *fasthttp.Client, method, url string, headers map[string]string, body []byte) (int, []byte) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI(url)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.SetContentType("application/json")
	req.SetBody(body)
	if err := cl.Do(req, resp); err != nil {
		return 0, []byte(err.Error())
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...)
}
