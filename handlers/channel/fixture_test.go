package channel_test

import (
	"testing"

	"github.com/ticketd/ticketd/handlers/servertest"
	"github.com/ticketd/ticketd/inventory/money"
)

// The partner tests' fixture lives in servertest (other packages' tests
// run against it too); these are its short names here.
const testCatalog = servertest.Catalog

var (
	keyed = servertest.Keyed
	with  = servertest.With
	buyer = servertest.Buyer
)

func reserve(t *testing.T, s *servertest.Server, ch, event string, body map[string]any) *servertest.Response {
	t.Helper()
	return s.Reserve(t, ch, event, body)
}

type reserved = servertest.Reserved

func mustReserve(t *testing.T, s *servertest.Server, ch, event string, body map[string]any) reserved {
	t.Helper()
	return s.MustReserve(t, ch, event, body)
}

func confirm(t *testing.T, s *servertest.Server, ch, orderID string, amount money.Cents, ref string) *servertest.Response {
	t.Helper()
	return s.Confirm(t, ch, orderID, amount, ref)
}

func start(t *testing.T, opt servertest.Options) *servertest.Server {
	t.Helper()
	return servertest.StartWithCatalog(t, opt)
}

var expect = servertest.Expect
