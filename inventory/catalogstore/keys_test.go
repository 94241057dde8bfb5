package catalogstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/inventory/catalog"
	"github.com/ticketd/ticketd/inventory/catalogstore"
)

func channel(id, key string) catalog.Channel {
	return catalog.Channel{ID: id, Name: id, Key: key, Secret: "secret-" + id, Scopes: []string{catalog.ScopeCatalogRead},
		IPAllowlist: []string{"127.0.0.1"}, Settlement: "invoice"}
}

// applyDoc validates and applies doc.
func applyDoc(t *testing.T, s *catalogstore.Store, doc *catalog.Document) error {
	t.Helper()
	if err := catalog.Validate(doc); err != nil {
		t.Fatalf("document is invalid: %v", err)
	}
	_, err := s.Apply(context.Background(), doc)
	return err
}

// wantInvalid asserts a validation error at path.
func wantInvalid(t *testing.T, err error, path string) {
	t.Helper()
	var ve *catalog.ValidationError
	if !errors.As(err, &ve) || ve.Path != path {
		t.Fatalf("got %v, want a validation error at %s", err, path)
	}
}

// keyOwners maps each channel key of the served catalog to its channel id.
func keyOwners(s *catalogstore.Store) map[string]string {
	m := map[string]string{}
	for k, c := range s.Current().ByKey {
		m[k] = c.ID
	}
	return m
}

// A channel key that a channel already in the catalog keeps is refused,
// naming the field, before anything is written; keys may move between the
// channels one document replaces (a swap).
func testChannelKeys(t *testing.T, s *catalogstore.Store) {
	if err := applyDoc(t, s, &catalog.Document{Channels: []catalog.Channel{channel("ch1", "ck1"), channel("ch2", "ck2")}}); err != nil {
		t.Fatal(err)
	}
	version := s.Current().Version

	err := applyDoc(t, s, &catalog.Document{Channels: []catalog.Channel{channel("ch3", "ck3"), channel("ch4", "ck1")}})
	wantInvalid(t, err, "channels[1].key")
	if s.Current().Version != version || s.Current().Channels["ch3"] != nil {
		t.Fatal("a refused document was applied")
	}
	// ch1 keeps ck1 unless this document gives ch1 another key.
	err = applyDoc(t, s, &catalog.Document{Channels: []catalog.Channel{channel("ch2", "ck1")}})
	wantInvalid(t, err, "channels[0].key")

	// Swapping two channels' keys in one document, and handing a key on
	// to a new channel while its old channel takes another, are fine.
	if err := applyDoc(t, s, &catalog.Document{Channels: []catalog.Channel{channel("ch1", "ck2"), channel("ch2", "ck1")}}); err != nil {
		t.Fatalf("swap: %v", err)
	}
	if err := applyDoc(t, s, &catalog.Document{Channels: []catalog.Channel{channel("ch3", "ck2"), channel("ch1", "ck9")}}); err != nil {
		t.Fatalf("key handed on: %v", err)
	}
	want := map[string]string{"ck9": "ch1", "ck1": "ch2", "ck2": "ch3"}
	if got := keyOwners(s); len(got) != len(want) || got["ck9"] != "ch1" || got["ck1"] != "ch2" || got["ck2"] != "ch3" {
		t.Fatalf("keys after the applies: %v, want %v", got, want)
	}
}

func TestChannelKeyOfAnotherChannelIsRefused(t *testing.T) {
	t.Run("without Postgres", func(t *testing.T) {
		s, _ := setup(t)
		testChannelKeys(t, s)
	})
	t.Run("with the record", func(t *testing.T) {
		s, _, _ := setupRecorded(t)
		testChannelKeys(t, s)
	})
}

// A publishable key that another tenant keeps is refused the same way.
func TestPublishableKeyOfAnotherTenantIsRefused(t *testing.T) {
	s, _ := setup(t)
	tenant := func(id, key string) catalog.Tenant {
		return catalog.Tenant{ID: id, Name: id, PublishableKeys: []catalog.PublishableKey{{Key: key, Domains: []string{"shop.test"}}}}
	}
	if err := applyDoc(t, s, &catalog.Document{Tenants: []catalog.Tenant{tenant("t1", "pk1")}}); err != nil {
		t.Fatal(err)
	}
	err := applyDoc(t, s, &catalog.Document{Tenants: []catalog.Tenant{tenant("t2", "pk1")}})
	wantInvalid(t, err, "tenants[0].publishableKeys[0].key")
	if err := applyDoc(t, s, &catalog.Document{Tenants: []catalog.Tenant{tenant("t1", "pk2"), tenant("t2", "pk1")}}); err != nil {
		t.Fatalf("key handed on to another tenant in one document: %v", err)
	}
	if pk := s.Current().PublishableKeys["pk1"]; pk == nil || pk.TenantID != "t2" {
		t.Fatalf("pk1 after it was handed on: %+v", pk)
	}
}
