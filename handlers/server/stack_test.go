package server_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/valyala/fasthttp"

	"github.com/ticketd/ticketd/handlers/servertest"
)

// Through the whole stack on a real listener: /readyz reports the live
// dependencies, and requests show up in /metrics by route and code.
func TestReadyzAndMetricsThroughTheStack(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})

	r := s.Do(t, "GET", "/readyz", nil, nil)
	if r.Status != 200 || !strings.Contains(string(r.Data), `"status":"ok"`) || !strings.Contains(string(r.Data), `"postgres":"ok"`) ||
		!strings.Contains(string(r.Data), `"redis":"current"`) || !strings.Contains(string(r.Data), `"durability":"everything"`) {
		t.Fatalf("readyz: %s", r)
	}
	for i := 0; i < 3; i++ {
		if r := s.Do(t, "GET", "/v1/channel/events/ev_x", map[string]string{"x-service-key": "ck_none", "x-service-secret": "nope"}, nil); r.Status != 401 {
			t.Fatalf("unknown key: %s", r)
		}
	}

	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(s.URL + "/metrics")
	if err := s.Client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		t.Fatalf("/metrics: %v %d", err, resp.StatusCode())
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(resp.Body()))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	want := map[[3]string]float64{
		{"/v1/channel/events/{id}", "GET", "401"}: 3,
		{"/readyz", "GET", "200"}:                 1,
	}
	for _, m := range mfs["ticketd_http_requests_total"].GetMetric() {
		var k [3]string
		for _, lp := range m.GetLabel() {
			switch lp.GetName() {
			case "route":
				k[0] = lp.GetValue()
			case "method":
				k[1] = lp.GetValue()
			case "code":
				k[2] = lp.GetValue()
			}
		}
		if n, ok := want[k]; ok {
			if m.GetCounter().GetValue() != n {
				t.Errorf("%v counted %v, want %v", k, m.GetCounter().GetValue(), n)
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		t.Fatalf("not in /metrics: %v\n%s", want, resp.Body())
	}
	// The state monitor feeds the state and durability gauges (the shared
	// test Redis keeps nothing on disk).
	for family, label := range map[string][2]string{
		"ticketd_redis_state":      {"state", "current"},
		"ticketd_redis_durability": {"level", "everything"},
	} {
		found := false
		for _, m := range mfs[family].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label[0] && lp.GetValue() == label[1] && m.GetGauge().GetValue() == 1 {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s{%s=%q} is not 1 in /metrics:\n%s", family, label[0], label[1], resp.Body())
		}
	}
}
