package catalogdb_test

import (
	"context"
	"testing"

	json "github.com/goccy/go-json"
	"github.com/shopspring/decimal"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/money"
	"github.com/ticketd/ticketd/sync/catalogdb"
	"github.com/ticketd/ticketd/sync/pgtest"
)

func ptr[T any](v T) *T { return &v }

func event(id, name string) catalog.Event {
	return catalog.Event{
		ID: id, ShortID: "s" + id, Slug: "slug-" + id, Name: name, StartsAt: "2030-01-02T20:00:00Z",
		Status: catalog.StatusOnSale, Storefront: true, Channels: []string{"ch_a"},
		Pricing: &catalog.Pricing{FeePerTicket: 150, FeePercent: decimal.RequireFromString("2.5"),
			VATPercent: decimal.RequireFromString("21"), RefundProtectionPercent: decimal.RequireFromString("0")},
		Tickets: []catalog.Ticket{{ID: "tk_" + id, Name: "GA", Price: 4250, Capacity: 100}},
		DiscountCodes: []catalog.DiscountCode{{Code: "TEN", Percent: ptr(decimal.RequireFromString("10")),
			MaxUses: ptr(int64(5))}},
		SeatMap: &catalog.SeatMap{
			Categories: []catalog.Category{{ID: "c1", Name: "Stalls", Price: ptr(money.Cents(9900))}},
			Rows:       []catalog.Row{{Label: "A", Seats: 10, Category: "c1"}},
		},
	}
}

func channel(id, key string) catalog.StoredChannel {
	return catalog.StoredChannel{
		Channel: catalog.Channel{ID: id, Name: "Partner " + id, Key: key,
			Scopes: []string{catalog.ScopeCatalogRead, catalog.ScopeOrdersWrite}, IPAllowlist: []string{"10.0.0.0/8"},
			Settlement: catalog.SettlementPartnerRemit, RateLimits: catalog.RateLimits{Checkout: 600}},
		SecretHash: catalog.HashSecret("secret-" + id), SigningKeySealed: "sealed-" + id,
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyThenLoadRoundTrips(t *testing.T) {
	t.Parallel()
	s := &catalogdb.Store{Pool: pgtest.New(t)}
	ctx := context.Background()

	tenants, channels, err := s.Load(ctx)
	if err != nil || len(tenants) != 0 || len(channels) != 0 {
		t.Fatalf("empty database: Load = %v, %v, %v", tenants, channels, err)
	}

	// Given out of id order: Load sorts tenants, events and channels by id.
	in := []catalog.Tenant{
		{ID: "t_b", Name: "B", NotifyEmail: "b@example.com", Events: []catalog.Event{event("ev_2", "Two"), event("ev_1", "One")},
			PublishableKeys: []catalog.PublishableKey{{Key: "pk_b", Domains: []string{"b.example"}, Enabled: true}}},
		{ID: "t_a", Name: "A", NotifyEmail: "a@example.com"},
	}
	chans := []catalog.StoredChannel{channel("ch_b", "key_b"), channel("ch_a", "key_a")}
	if err := s.Apply(ctx, in, chans); err != nil {
		t.Fatal(err)
	}
	tenants, channels, err = s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}

	wantB := in[0]
	wantB.Events = []catalog.Event{event("ev_1", "One"), event("ev_2", "Two")}
	for i := range wantB.Events {
		wantB.Events[i].TenantID = "t_b"
	}
	wantA := in[1]
	wantA.Events = []catalog.Event{}
	if got, want := asJSON(t, tenants), asJSON(t, []catalog.Tenant{wantA, wantB}); got != want {
		t.Fatalf("tenants:\n got %s\nwant %s", got, want)
	}
	if got, want := asJSON(t, channels), asJSON(t, []catalog.StoredChannel{chans[1], chans[0]}); got != want {
		t.Fatalf("channels:\n got %s\nwant %s", got, want)
	}
}

// A later apply replaces what it names and leaves the rest, as the catalog's
// merge-by-id does: events of a tenant not named stay, an event given under
// another tenant moves, and two channels may swap keys in one apply.
func TestApplyMergesByID(t *testing.T) {
	t.Parallel()
	s := &catalogdb.Store{Pool: pgtest.New(t)}
	ctx := context.Background()
	err := s.Apply(ctx, []catalog.Tenant{
		{ID: "t_a", Name: "A", Events: []catalog.Event{event("ev_1", "One"), event("ev_2", "Two")}},
		{ID: "t_b", Name: "B"},
	}, []catalog.StoredChannel{channel("ch_a", "key_a"), channel("ch_b", "key_b")})
	if err != nil {
		t.Fatal(err)
	}

	renamed := event("ev_1", "One, renamed")
	err = s.Apply(ctx, []catalog.Tenant{
		{ID: "t_a", Name: "A2", Events: []catalog.Event{renamed}},
		{ID: "t_b", Name: "B", Events: []catalog.Event{event("ev_2", "Two")}},
	}, []catalog.StoredChannel{channel("ch_a", "key_b"), channel("ch_b", "key_a")})
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	tenants, channels, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tenants) != 2 || tenants[0].Name != "A2" {
		t.Fatalf("tenants = %s", asJSON(t, tenants))
	}
	if evs := tenants[0].Events; len(evs) != 1 || evs[0].ID != "ev_1" || evs[0].Name != "One, renamed" || evs[0].TenantID != "t_a" {
		t.Fatalf("t_a events = %s", asJSON(t, evs))
	}
	if evs := tenants[1].Events; len(evs) != 1 || evs[0].ID != "ev_2" || evs[0].TenantID != "t_b" {
		t.Fatalf("t_b events = %s (ev_2 should have moved here)", asJSON(t, evs))
	}
	if channels[0].Key != "key_b" || channels[1].Key != "key_a" {
		t.Fatalf("channel keys after swap = %s, %s", channels[0].Key, channels[1].Key)
	}
}

// An apply that fails writes nothing.
func TestApplyIsAllOrNothing(t *testing.T) {
	t.Parallel()
	s := &catalogdb.Store{Pool: pgtest.New(t)}
	ctx := context.Background()
	err := s.Apply(ctx, []catalog.Tenant{{ID: "t_a", Name: "A", Events: []catalog.Event{event("ev_1", "One")}}},
		[]catalog.StoredChannel{channel("ch_a", "same"), channel("ch_b", "same")})
	if err == nil {
		t.Fatal("two channels with one key were accepted")
	}
	tenants, channels, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tenants) != 0 || len(channels) != 0 {
		t.Fatalf("failed apply left %d tenants and %d channels", len(tenants), len(channels))
	}
}
