package orders

import (
	"testing"
	"time"
)

// TestSoldOutAnswersFromMemoryUnderOneCatalog: once the script reported a
// counter used up, reserves claiming it are answered without the script
// (a capacity raised behind the catalog's back is not seen), until the
// catalog version moves or soldOutFor passes; then Redis decides again.
func TestSoldOutAnswersFromMemoryUnderOneCatalog(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "1", "ev", "50")
	mustReserveAndConfirm(t, s, 7) // the last t:a
	r := req("ev", map[string]int64{"t:a": 1, "ev": 1})
	r.CatalogVersion = 7
	if _, err := s.Reserve(ctx, r); code(err) != "TICKET_SOLD_OUT" {
		t.Fatalf("after the sale: %v, want TICKET_SOLD_OUT", err)
	}

	caps(t, s, "ev", "t:a", "5") // behind the catalog's back: not seen under version 7
	r = req("ev", map[string]int64{"t:a": 1, "ev": 1})
	r.CatalogVersion = 7
	if _, err := s.Reserve(ctx, r); code(err) != "TICKET_SOLD_OUT" {
		t.Fatalf("same catalog, answered from memory: %v, want TICKET_SOLD_OUT", err)
	}
	// A cart that does not claim the used-up counter still goes to Redis.
	other := req("ev", map[string]int64{"ev": 1})
	other.CatalogVersion = 7
	if _, err := s.Reserve(ctx, other); err != nil {
		t.Fatalf("cart without the sold-out ticket: %v", err)
	}
	r.CatalogVersion = 8
	if _, err := s.Reserve(ctx, r); err != nil {
		t.Fatalf("under the next catalog Redis decides: %v", err)
	}

	caps(t, s, "ev", "t:a", "0")
	r = req("ev", map[string]int64{"t:a": 1})
	r.CatalogVersion = 8
	if _, err := s.Reserve(ctx, r); code(err) != "TICKET_SOLD_OUT" {
		t.Fatalf("capacity 0: %v", err)
	}
	caps(t, s, "ev", "t:a", "9")
	time.Sleep(soldOutFor + 100*time.Millisecond)
	if _, err := s.Reserve(ctx, r); err != nil {
		t.Fatalf("after %s Redis decides again: %v", soldOutFor, err)
	}
}

// mustReserveAndConfirm sells one t:a ticket of "ev" under the version.
func mustReserveAndConfirm(t *testing.T, s *Service, version int64) string {
	t.Helper()
	r := req("ev", map[string]int64{"t:a": 1, "ev": 1})
	r.CatalogVersion = version
	res, err := s.Reserve(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Confirm(t.Context(), ConfirmRequest{ChannelID: "c", OrderID: res.OrderID, Amount: 1000, Reference: "r-" + res.OrderID}); err != nil {
		t.Fatal(err)
	}
	return res.OrderID
}

// TestSoldOutStillReplaysAKeyUsedBefore: a buyer whose reserve went
// through before the sell-out and who retries with the same key gets the
// order back, not "sold out"; another request under that key is a conflict.
func TestSoldOutStillReplaysAKeyUsedBefore(t *testing.T) {
	s, ctx := setup(t)
	caps(t, s, "ev", "t:a", "1")
	early := req("ev", map[string]int64{"t:a": 1})
	got, err := s.Reserve(ctx, early)
	if err != nil {
		t.Fatal(err)
	}
	mustReserveAndConfirm(t, s, 0) // sells the last one
	late := req("ev", map[string]int64{"t:a": 1})
	if _, err := s.Reserve(ctx, late); code(err) != "TICKET_SOLD_OUT" {
		t.Fatalf("after the sale: %v", err)
	}
	if _, ok := s.sold.first("ev", early.Claims, 0); !ok {
		t.Fatal("the used-up counter was not remembered")
	}
	again, err := s.Reserve(ctx, early)
	if err != nil || !again.Duplicate || again.OrderID != got.OrderID {
		t.Fatalf("retry of a reserve made before the sell-out: %+v %v, want its order %s again", again, err, got.OrderID)
	}
	conflict := early
	conflict.Fingerprint = "another request"
	if _, err := s.Reserve(ctx, conflict); code(err) != "KEY_CONFLICT" {
		t.Fatalf("another request under a used key: %v, want KEY_CONFLICT", err)
	}
}
