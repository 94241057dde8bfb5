package catalog

import (
	"errors"
	"os"
	"testing"
)

// FuzzValidate runs what PUT /v1/admin/catalog runs on a document, Decode
// then Validate, and compiles what passes: no input may panic, every
// refusal must be a *ValidationError (the handler answers it 400
// INVALID_CATALOG; any other error would be a 503), and a document that
// passes must compile.
func FuzzValidate(f *testing.F) {
	if b, err := os.ReadFile("../../catalog.example.json"); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		`{}`, `{"tenants":[],"channels":[]}`, `[]`, `null`, `{"tenants":null}`, `{"tenants":[{}]}`,
		`{"tenants":[{"id":"t","name":"T","events":[{"id":"e","shortId":"e1","slug":"e","name":"E","startsAt":"2027-01-01T00:00:00Z","status":"on_sale","tickets":[{"id":"k","name":"K","price":1e309,"capacity":1}]}]}]}`,
		`{"tenants":[{"id":"t","name":"T","events":[{"id":"e","shortId":"e1","slug":"e","name":"E","startsAt":"2027-01-01T00:00:00Z","status":"on_sale","tickets":[{"id":"k","name":"K","price":12.345,"capacity":1}]}]}]}`,
		`{"tenants":[{"id":"t","name":"T","events":[{"id":"e","shortId":"e1","slug":"e","name":"E","startsAt":"2027-01-01T00:00:00Z","status":"on_sale","tickets":[{"id":"k","name":"K","price":-0,"capacity":-1}]}]}]}`,
		`{"tenants":[{"id":"t","name":"T","events":[{"id":"e","shortId":"e1","slug":"e","name":"E","startsAt":"2027-01-01T00:00:00Z","status":"on_sale","tickets":[{"id":"k","name":"K","price":1,"capacity":1}],"waitingRoom":{"opensAt":"2026-12-01T00:00:00Z","salesStartAt":"2026-12-01T01:00:00Z","passTtl":60,"perBuyer":2,"mode":"fifo"}}]}]}`,
		`{"tenants":[{"id":"t","id":"u","name":"T"}]}`, `{"tenants":[{"id":"t","name":"T"}]} x`, `{"tenants":[{"id":"t","name":`,
		`{"channels":[{"id":"c","name":"C","key":"k","secret":"s","scopes":["nope"],"ipAllowlist":["300.0.0.0/8"]}]}`,
		`{"tenants":[{"id":"t\u0000","name":"\ud800"}]}`,
	} {
		f.Add([]byte(s))
	}
	sealer := NewSealer("fuzz")
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := Decode(body)
		if err == nil {
			err = Validate(doc)
		}
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Msg == "" {
				t.Fatalf("refusal is not a *ValidationError with a message: %T %v", err, err)
			}
			return
		}
		stored := make([]StoredChannel, len(doc.Channels))
		for i, c := range doc.Channels {
			stored[i] = sealer.Store(c)
		}
		if _, err := Compile(1, doc.Tenants, stored, sealer); err != nil {
			t.Fatalf("a valid document does not compile: %v", err)
		}
	})
}
