package webhooks

import (
	"strings"
	"testing"
)

// A malformed webhook body is refused with where its JSON breaks.
func TestMalformedWebhookSaysWhere(t *testing.T) {
	var v struct {
		ID string `json:"id"`
	}
	e := strict([]byte("{\n\"id\": \"evt_1\",\n}"), &v)
	want := "webhook body is not valid: malformed JSON at byte 18 (line 3, column 1): invalid character '}'"
	if e == nil || e.Code != "INVALID_REQUEST" || !strings.HasPrefix(e.Message, want) {
		t.Fatalf("strict = %v, want INVALID_REQUEST %q...", e, want)
	}
}
