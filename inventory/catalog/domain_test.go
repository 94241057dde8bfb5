package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/inventory/catalog"
)

// A domain entry that could never match a browser's Origin, or would
// match far too much, is refused where it is written.
func TestDomainEntriesRefused(t *testing.T) {
	for _, d := range []string{
		"bücher.example",     // Unicode: browsers send xn--bcher-kva.example
		"shop.exämple.com",   // in any label
		"*.com",              // every .com site
		"*.com.",             // with a trailing dot
		"*.localhost",        // any label under a single one
		"*.com:443",          // with a port
		"*.co.uk",            // a public suffix of two labels
		"*.github.io",        // a hosting provider's suffix: anyone's site
		"*.GitHub.IO",        // in any case
		"shop.example.com\n", // control character
	} {
		t.Run(d, func(t *testing.T) {
			doc := decodeValid(t)
			tenA(doc).PublishableKeys[0].Domains[1] = d
			var ve *catalog.ValidationError
			if err := catalog.Validate(doc); !errors.As(err, &ve) || ve.Path != "tenants[0].publishableKeys[0].domains[1]" {
				t.Fatalf("%q: %v, want a validation error at tenants[0].publishableKeys[0].domains[1]", d, err)
			}
			if strings.HasSuffix(d, ".uk") || strings.HasSuffix(strings.ToLower(d), ".io") {
				if !strings.Contains(ve.Msg, "public suffix") {
					t.Fatalf("%q: %q does not say it is a public suffix", d, ve.Msg)
				}
			}
			if strings.Contains(d, "ü") || strings.Contains(d, "ä") {
				if !strings.Contains(ve.Msg, "punycode") {
					t.Fatalf("%q: %q does not say to write it in punycode", d, ve.Msg)
				}
			}
		})
	}
}

func TestDomainEntriesAccepted(t *testing.T) {
	for _, d := range []string{"xn--bcher-kva.example", "*.example.com", "*.shop.example.co.uk", "*.acme.github.io", "*.acme.test", "localhost:3000", "127.0.0.1", "shop.example.com."} {
		doc := decodeValid(t)
		tenA(doc).PublishableKeys[0].Domains[1] = d
		if err := catalog.Validate(doc); err != nil {
			t.Errorf("%q: %v", d, err)
		}
	}
}
