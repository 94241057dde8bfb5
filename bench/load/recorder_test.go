package load

import (
	"math"
	"testing"
	"time"
)

// TestStatsPercentiles: 1..10,000 ms recorded once each gives the
// percentiles a reader expects, to HDR's three significant digits.
func TestStatsPercentiles(t *testing.T) {
	h := newHist()
	for i := 1; i <= 10000; i++ {
		_ = h.RecordValue(micros(time.Duration(i) * time.Millisecond))
	}
	s := Stats("op", h)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", s.P50, 5000}, {"p90", s.P90, 9000}, {"p99", s.P99, 9900}, {"p99.9", s.P999, 9990}, {"max", s.Max, 10000},
	} {
		if math.Abs(c.got-c.want)/c.want > 0.001 {
			t.Errorf("%s = %.1fms, want %.0fms within 0.1%%", c.name, c.got, c.want)
		}
	}
	if s.Count != 10000 || len(s.Curve) != len(Quantiles) || s.Curve[len(s.Curve)-1].Percentile != 100 {
		t.Fatalf("count %d curve %d points", s.Count, len(s.Curve))
	}
}

func TestMicrosClampsToTheHistogramRange(t *testing.T) {
	if micros(0) != histMin || micros(time.Hour) != histMax {
		t.Fatalf("micros(0)=%d micros(1h)=%d", micros(0), micros(time.Hour))
	}
}

func TestField(t *testing.T) {
	body := []byte(`{"success":true,"data":{"orderId":"o17abc","amount": 26.50,"currency":"USD","x":"a\"b"}}`)
	for key, want := range map[string]string{
		`"orderId":`: "o17abc", `"amount":`: "26.50", `"currency":`: "USD", `"success":`: "true", `"x":`: `a\"b`, `"nope":`: "",
	} {
		if got := string(Field(body, key)); got != want {
			t.Errorf("Field(%s) = %q, want %q", key, got, want)
		}
	}
}
