package httpx

import (
	json "github.com/goccy/go-json"

	"github.com/ticketd/ticketd/inventory/apierr"
	"github.com/ticketd/ticketd/inventory/money"
)

// Amount reads the amount a client sent in field, raw as it came: a JSON
// number with at most two decimals. A quoted number is refused: the
// interface types every amount a client sends as a number, and a client
// that sends a string has a bug that the next amount it formats may not
// survive. The caller says what a missing one (raw nil) means.
func Amount(field string, raw json.RawMessage) (money.Cents, *apierr.Error) {
	if len(raw) == 0 || raw[0] == '"' {
		return 0, apierr.Invalid("%s must be a JSON number", field)
	}
	c, err := money.Parse(string(raw))
	if err != nil {
		return 0, apierr.Invalid("%s must be a non-negative number with at most two decimals", field)
	}
	return c, nil
}
