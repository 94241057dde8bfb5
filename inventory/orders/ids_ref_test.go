package orders

import "testing"

// The reference is the id's first ten random characters, grouped and in
// capitals, as the demo shop's pages show it; any other id is its own.
func TestReference(t *testing.T) {
	for id, want := range map[string]string{
		"o72atessijrh77igh2o24foeg.ev_demo_seated": "72ATE-SSIJR",
		NewOrderID("ev_x"):                         "",
		"o72ates.ev_x":                             "o72ates.ev_x", // too short
		"x72atessijrh77.ev":                        "x72atessijrh77.ev",
		"o72atessij0h77.ev":                        "o72atessij0h77.ev", // 0 is not base32
		"o72atessijrh77":                           "o72atessijrh77",    // no event part
	} {
		got := Reference(id)
		if want == "" { // a fresh id
			if len(got) != 11 || got[5] != '-' || got != Reference(id) {
				t.Errorf("Reference(%s) = %q, want XXXXX-XXXXX", id, got)
			}
			continue
		}
		if got != want {
			t.Errorf("Reference(%s) = %q, want %q", id, got, want)
		}
	}
}
