package picker_test

import (
	"testing"
	"time"

	"github.com/ticketd/ticketd/handlers/picker"
	"github.com/ticketd/ticketd/handlers/servertest"
)

// pickerRoutes are the seat picker's page, its assets and its seat API
// (x-picker-token): {a} and {b} are the halves of the fuzzed id around '|'
// (slug and shortId, the file, or the event and hold token). Routes 2 to 9
// are the seat API, in servertest.SeatSeeds' order.
var pickerRoutes = []string{
	"GET /events/{a}/{b}/seatmap",
	"GET /assets/picker/{a}",
	"GET " + picker.Prefix + "/seating/events/{a}/config",
	"GET " + picker.Prefix + "/seating/events/{a}/availability",
	"GET " + picker.Prefix + "/seating/events/{a}/hold/{b}",
	"POST " + picker.Prefix + "/seating/events/{a}/hold-token",
	"POST " + picker.Prefix + "/seating/events/{a}/hold",
	"POST " + picker.Prefix + "/seating/events/{a}/hold/{b}/extend",
	"POST " + picker.Prefix + "/seating/events/{a}/release",
	"POST " + picker.Prefix + "/seating/events/{a}/best-available",
}

// FuzzPickerHTTP sends fuzzed requests to the seat picker through the
// whole stack: the page's slug, shortId and query, the seat API's event,
// hold token, x-picker-token (a valid one for sf_seated unless the fuzzed
// headers name another) and JSON body. No answer may be a 5xx; every
// refusal of the seat API is the envelope with a code of the table (the
// page's is its 404 page).
func FuzzPickerHTTP(f *testing.F) {
	s := servertest.StartStorefront(f, servertest.Options{Trusted: "127.0.0.1/32"})
	tok := picker.Sign([]byte(servertest.PickerKey), "sf_seated", "t_shop", time.Now().Add(picker.TokenTTL))
	r := s.Do(f, "POST", picker.Prefix+"/seating/events/sf_seated/hold-token", map[string]string{picker.TokenHeader: tok}, map[string]any{})
	var ht struct {
		HoldToken string `json:"holdToken"`
	}
	r.Decode(f, &ht)
	vars := map[string]string{"HOLD": ht.HoldToken, "TOKEN": tok}
	f.Add(uint8(0), "hall|sfst1", "app=storefront", "", []byte(nil))
	f.Add(uint8(1), "picker.js", "v=1", "", []byte(nil))
	for i, seed := range servertest.SeatSeeds("sf_seated") {
		f.Add(uint8(2+i), seed[0], "", "", []byte(seed[1]))
	}
	f.Add(uint8(7), "sf_seated|$HOLD", "", "", []byte(nil)) // extend with no body at all
	f.Add(uint8(0), "hall|sfst1", "app=other", "", []byte(nil))
	f.Add(uint8(2), "sf_ga", "", "x-picker-token: $TOKEN", []byte(nil))
	f.Add(uint8(2), "sf_seated", "", "x-picker-token: sf_seated:t_shop:1:AAAA", []byte(nil))

	f.Fuzz(func(t *testing.T, route uint8, id, query, headers string, body []byte) {
		method, _, path := servertest.FuzzTarget(pickerRoutes, route, servertest.Subst(id, vars), query, "")
		req := servertest.FuzzRequest{Method: method, Path: path, HTML: route%uint8(len(pickerRoutes)) < 2,
			Headers: [][2]string{{picker.TokenHeader, tok}, {"X-Forwarded-For", servertest.FuzzClientIP()}}}
		if method == "POST" {
			req.Body = []byte(servertest.Subst(string(body), vars))
		}
		req.Headers = append(req.Headers, servertest.FuzzHeaders(servertest.Subst(headers, vars))...)
		s.Send(t, req)
	})
}
