package httpx

import (
	"testing"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/inventory/money"
)

// fuzzBody has a field of every kind the request bodies use: pointers,
// slices of structs, money, raw JSON, maps.
type fuzzBody struct {
	Name     *string  `json:"name"`
	Quantity *int64   `json:"quantity"`
	Labels   []string `json:"seatLabels"`
	Lines    []struct {
		ID string
		N  int64
	} `json:"tickets"`
	Amount *money.Cents     `json:"amount"`
	Raw    *json.RawMessage `json:"raw"`
	Opt    bool             `json:"opt"`
	Meta   map[string]any   `json:"meta"`
}

// FuzzDecode checks the body decoder every JSON endpoint uses: no input
// panics it, and every refusal is 400 INVALID_REQUEST with a message.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, ``, `{"name":"Ada","quantity":2,"seatLabels":["A-1"],"tickets":[{"ID":"t","N":1}],"amount":42.5}`,
		`{"quantity":1e309}`, `{"quantity":-0}`, `{"amount":12.345}`, `{"amount":"1.00"}`, `{"name":null}`, `{"name":"a","name":"b"}`,
		`{"quantity":"2"}`, `{"tickets":{}}`, `[`, `{"meta":` + deep(200) + `}`, `{"name":"\ud800"}`, `null`, `"x"`, `{"raw":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetBody(body)
		var v fuzzBody
		if e := Decode(&ctx, &v); e != nil && (e.Code != "INVALID_REQUEST" || e.Status != 400 || e.Message == "") {
			t.Fatalf("Decode(%q) = %+v", body, e)
		}
	})
}

func deep(n int) string {
	b := make([]byte, 0, 2*n+2)
	for range n {
		b = append(b, `{"a":`...)
	}
	b = append(b, '1')
	for range n {
		b = append(b, '}')
	}
	return string(b)
}
