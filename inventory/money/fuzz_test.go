package money

import (
	"errors"
	"math"
	"regexp"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/shopspring/decimal"
)

// twoDecimals is the only shape String may produce: no exponent, no
// float artefact (0.30000000000000004), no locale separator.
var twoDecimals = regexp.MustCompile(`^-?(0|[1-9][0-9]*)\.[0-9]{2}$`)

// FuzzParse checks that Parse never panics, refuses with ErrInvalidAmount
// only, accepts exactly the non-negative amounts of whole cents up to 2^53
// cents, and that what it accepts formats back to the same value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "42.5", "42.50", "12.345", "-0", "-1", "1e2", "1e-2", "1e309",
		"1E-3", "9007199254740.92", "90071992547409.93", "0.1", "0.30000000000000004", "", " 1", "1 ",
		"NaN", "Inf", "+1", "0x10", "1_000", "١٢", "00012.10", ".5", "5.", "1e-400", "123456789012345678901234567890"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		d, derr := decimal.NewFromString(s)
		// The oracle: decimal's own reading, in whole cents, 0..2^53.
		want := derr == nil && !d.IsNegative() && d.Shift(2).IsInteger() &&
			d.Shift(2).LessThanOrEqual(decimal.NewFromInt(1<<53))
		if err != nil {
			if !errors.Is(err, ErrInvalidAmount) {
				t.Fatalf("Parse(%q): error %v is not ErrInvalidAmount", s, err)
			}
			if want {
				t.Fatalf("Parse(%q) refused an amount of whole cents: %v", s, err)
			}
			return
		}
		if !want {
			t.Fatalf("Parse(%q) = %d, want a refusal", s, c)
		}
		if c < 0 || int64(c) > 1<<53 {
			t.Fatalf("Parse(%q) = %d: out of range", s, c)
		}
		if !decimal.NewFromInt(int64(c)).Equal(d.Shift(2)) {
			t.Fatalf("Parse(%q) = %d cents, want %s", s, c, d.Shift(2))
		}
		roundTrip(t, c)
	})
}

// FuzzFormat checks String for every int64: the two-decimal shape, and
// parse(format(x)) == x for every amount Parse accepts.
func FuzzFormat(f *testing.F) {
	for _, v := range []int64{0, 1, 9, 10, 99, 100, 4250, 1 << 53, 1<<53 + 1, -1, -100, math.MaxInt64, math.MinInt64 + 1} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v int64) {
		if v == math.MinInt64 {
			return // -v overflows; no amount reaches it (Parse caps at 2^53)
		}
		s := Cents(v).String()
		if !twoDecimals.MatchString(s) {
			t.Fatalf("Cents(%d).String() = %q: not a two-decimal amount", v, s)
		}
		if !decimal.RequireFromString(s).Shift(2).Equal(decimal.NewFromInt(v)) {
			t.Fatalf("Cents(%d).String() = %q: another value", v, s)
		}
		if v >= 0 && v <= 1<<53 {
			roundTrip(t, Cents(v))
		}
	})
}

// FuzzUnmarshalJSON checks the JSON edge: a number or a numeric string is
// read as Parse reads it, anything else is refused without a panic, and
// MarshalJSON's output reads back to the same cents.
func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range []string{`42.5`, `"42.50"`, `"`, `""`, `null`, `true`, `[1]`, `{"a":1}`, `1e309`, `-0`, `"-0"`, `12.345`, `"\u0031"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Cents
		if err := c.UnmarshalJSON(b); err != nil {
			if !errors.Is(err, ErrInvalidAmount) {
				t.Fatalf("UnmarshalJSON(%q): error %v is not ErrInvalidAmount", b, err)
			}
			return
		}
		out, err := c.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Cents
		if err := json.Unmarshal(out, &back); err != nil || back != c {
			t.Fatalf("UnmarshalJSON(%q) = %d, marshalled %s, read back %d (%v)", b, c, out, back, err)
		}
	})
}

func roundTrip(t *testing.T, c Cents) {
	t.Helper()
	s := c.String()
	if !twoDecimals.MatchString(s) {
		t.Fatalf("Cents(%d).String() = %q: not a two-decimal amount", c, s)
	}
	back, err := Parse(s)
	if err != nil || back != c {
		t.Fatalf("Parse(%q) = %d, %v; want %d", s, back, err, c)
	}
}
