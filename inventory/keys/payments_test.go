package keys

import "testing"

// A test processor's session sits in its registration's slot, with its
// partition's due set, so paying it and owing the webhook is one script.
func TestPaySessionSharesItsRegistrationsSlot(t *testing.T) {
	s := Space{Prefix: "test:"}
	reg := OrderID("ev_summer", "abc123")
	sid := "cs_0a1b2c_" + reg
	got, ok := SessionRegistration(sid)
	if !ok || got != reg {
		t.Fatalf("SessionRegistration(%q) = %q, %v", sid, got, ok)
	}
	pay, ok := s.PaySession(sid)
	order, _ := s.Order(reg)
	if !ok || slotTag(pay) != slotTag(order) || slotTag(s.PayDue(Partition("ev_summer"), "card")) != slotTag(order) {
		t.Fatalf("session %q, order %q, due set in other slots", pay, order)
	}
}

func TestSessionRegistrationRefusesJunk(t *testing.T) {
	for _, id := range []string{"", "cs", "cs_", "cs__oabc.ev", "cs_abc_", "cs_abc_notanorder", "CS_abc_oabc.ev",
		"cs_ab{c_oabc.ev", "cs_abc_oabc.ev{p1}", "averyveryverylongprefix_abc_oabc.ev"} {
		if reg, ok := SessionRegistration(id); ok {
			t.Errorf("SessionRegistration(%q) = %q, want refused", id, reg)
		}
		if _, ok := (Space{}).PaySession(id); ok {
			t.Errorf("PaySession(%q) made a key", id)
		}
	}
}
