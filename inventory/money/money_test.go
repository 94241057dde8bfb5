package money

import (
	"testing"

	"github.com/shopspring/decimal"
)

func TestParseAndFormat(t *testing.T) {
	cases := []struct {
		in   string
		want Cents
		out  string
	}{
		{"42.5", 4250, "42.50"},
		{"42.50", 4250, "42.50"},
		{"0", 0, "0.00"},
		{"0.07", 7, "0.07"},
		{"1234567.89", 123456789, "1234567.89"},
		{"1e2", 10000, "100.00"},
	}
	for _, tc := range cases {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Fatalf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if got.String() != tc.out {
			t.Fatalf("String(%d) = %q; want %q", got, got.String(), tc.out)
		}
	}
	for _, bad := range []string{"-1", "0.001", "abc", "", "1e-3", "99999999999999999999"} {
		if _, err := Parse(bad); err == nil {
			t.Fatalf("Parse(%q) accepted", bad)
		}
	}
}

func TestPercentRoundsHalfAwayFromZero(t *testing.T) {
	// 2.5% of 1.00 is 2.5 cents: rounds to 3.
	if got := Cents(100).Percent(decimal.RequireFromString("2.5")); got != 3 {
		t.Fatalf("got %d", got)
	}
	// 10% of 0.15 is 1.5 cents: rounds to 2.
	if got := Cents(15).Percent(decimal.NewFromInt(10)); got != 2 {
		t.Fatalf("got %d", got)
	}
	if got := Cents(1999).Percent(decimal.NewFromInt(8)); got != 160 {
		t.Fatalf("got %d", got)
	}
}
