package catalog

import "time"

// SaleStarted reports whether the event's onSaleAt has come by now (always,
// for an event without one). It says nothing about its status.
func (e *CompiledEvent) SaleStarted(now time.Time) bool {
	return e.OnSale.IsZero() || !now.Before(e.OnSale)
}
