// Package money holds amounts as integer US cents and converts them at the
// JSON edge. Nothing inside ticketd does arithmetic on binary floats.
package money

import (
	"errors"
	"strconv"

	"github.com/shopspring/decimal"
)

// Cents is an amount in US cents.
type Cents int64

// ErrInvalidAmount means a wire amount was not a non-negative number with at
// most two decimals.
var ErrInvalidAmount = errors.New("money: amount must be a non-negative number with at most two decimals")

// Parse reads a decimal string such as "42.5" or "42.50" into cents. It
// rejects negatives, more than two decimals and exponents that leave a
// fraction of a cent.
func Parse(s string) (Cents, error) {
	if c, ok := parsePlain(s); ok {
		return c, nil
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return 0, ErrInvalidAmount
	}
	return FromDecimal(d)
}

// parsePlain reads the form nearly every amount has, digits with at most
// two decimals ("42", "42.5", "42.50"), without the big-number arithmetic
// of decimal (it was most of the CPU and allocations of decoding a stored
// order record); ok is false for any other form, which Parse leaves to
// decimal, and for amounts above 2^53 cents, which decimal refuses.
func parsePlain(s string) (Cents, bool) {
	i, v := 0, int64(0)
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if i == 16 {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
	}
	if i == 0 {
		return 0, false
	}
	v *= 100
	if i < len(s) {
		frac := s[i+1:]
		if s[i] != '.' || len(frac) == 0 || len(frac) > 2 {
			return 0, false
		}
		for j, scale := 0, int64(10); j < len(frac); j, scale = j+1, scale/10 {
			if frac[j] < '0' || frac[j] > '9' {
				return 0, false
			}
			v += int64(frac[j]-'0') * scale
		}
	}
	if v > maxCents {
		return 0, false
	}
	return Cents(v), true
}

// maxCents is the largest amount in cents ticketd takes: 2^53, the
// largest integer a JSON number (an IEEE 754 double) carries exactly.
const maxCents = 1 << 53

// FromDecimal converts an exact decimal amount into cents.
func FromDecimal(d decimal.Decimal) (Cents, error) {
	if d.IsNegative() {
		return 0, ErrInvalidAmount
	}
	c := d.Shift(2)
	if !c.Equal(c.Truncate(0)) {
		return 0, ErrInvalidAmount
	}
	if c.GreaterThan(decimal.NewFromInt(maxCents)) {
		return 0, ErrInvalidAmount
	}
	return Cents(c.IntPart()), nil
}

// String formats c with exactly two decimals and a full stop: 4250 -> "42.50".
// It never depends on locale; it is the form signatures are computed over.
func (c Cents) String() string {
	return string(c.Append(nil))
}

// Append appends the two-decimal form of c to b.
func (c Cents) Append(b []byte) []byte {
	v := int64(c)
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	b = strconv.AppendInt(b, v/100, 10)
	b = append(b, '.')
	frac := v % 100
	if frac < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, frac, 10)
}

// MarshalJSON writes c as a JSON number with two decimals (42.50).
func (c Cents) MarshalJSON() ([]byte, error) {
	return c.Append(make([]byte, 0, 16)), nil
}

// UnmarshalJSON reads a JSON number (or a numeric string) with at most two
// decimals.
func (c *Cents) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Percent returns pct percent of c, rounded half away from zero to the cent.
func (c Cents) Percent(pct decimal.Decimal) Cents {
	if pct.IsZero() || c == 0 {
		return 0
	}
	return Cents(decimal.NewFromInt(int64(c)).Mul(pct).Div(decimal.NewFromInt(100)).Round(0).IntPart())
}
