package scenario

import (
	"math"
	"testing"
)

// spearman on known examples: Wikipedia's IQ against hours of TV a week
// (no ties, rho = 1 - 6*194/(10*99) = -29/165), a tie (ranks 1, 2.5, 2.5,
// 4 against 1..4: rho = sqrt(0.9)), the same order, the reversed one.
func TestSpearmanOnKnownExamples(t *testing.T) {
	iq := []float64{106, 100, 86, 101, 99, 103, 97, 113, 112, 110}
	tv := []float64{7, 27, 2, 50, 28, 29, 20, 12, 6, 17}
	for _, c := range []struct {
		name string
		x, y []float64
		want float64
	}{
		{"IQ and TV", iq, tv, -29.0 / 165},
		{"a tie", []float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}, math.Sqrt(0.9)},
		{"same order, other values", []float64{0.1, 0.5, 0.7, 2}, []float64{10, 20, 300, 4000}, 1},
		{"reversed", []float64{1, 2, 3, 4, 5}, []float64{9, 7, 5, 3, 1}, -1},
	} {
		if got := spearman(c.x, c.y); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: rho %v, want %v", c.name, got, c.want)
		}
	}
	if got := spearman([]float64{1, 2, 3}, []float64{5, 5, 5}); !math.IsNaN(got) {
		t.Errorf("a constant order: rho %v, want NaN", got)
	}
	if got := discordant([]float64{1, 2, 3, 4}, []float64{1, 3, 2, 2}); got != 2 {
		t.Errorf("discordant pairs %d, want 2 (the second against the third and the fourth; their tie is not discordant)", got)
	}
}
