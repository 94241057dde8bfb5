package integrity

import "testing"

// TestCheckRoom: an honest room passes; a replayed pass that registered,
// a second place for one e-mail, an admitted buyer refused sold out or a
// bot let through each fail their check, calls not answered (shed under
// overload) do not; a room nobody replayed a pass in is "not checked",
// never passed.
func TestCheckRoom(t *testing.T) {
	ok := Room{Label: "r", Places: 100, Twice: 2, TwiceSame: 2, Registered: 10, Replays: 10, ReplaysRefused: 8, ReplaysLapsed: 2,
		Bots: 1, BotsRefused: 1}
	if cs := CheckRoom(ok); !cs.OK() || len(cs) != 4 {
		t.Fatalf("honest room: %+v", cs)
	}
	for name, bad := range map[string]func(r *Room){
		"a replay registered":          func(r *Room) { r.ReplaysRefused, r.ReplaysAccepted = 7, 1 },
		"a pass not replayed":          func(r *Room) { r.Registered = 11 },
		"a second place":               func(r *Room) { r.TwiceSame = 1 },
		"a place for two e-mails":      func(r *Room) { r.SharedPlaces = []string{"q1"} },
		"admitted with nothing to buy": func(r *Room) { r.NoStock = 1 },
		"a bot let through":            func(r *Room) { r.BotsRefused = 0 },
	} {
		r := ok
		bad(&r)
		if CheckRoom(r).OK() {
			t.Errorf("%s: passed", name)
		}
	}
	// an overloaded node shed a second join and a bot's call: errors of
	// the run, neither a place nor a registration
	shed := ok
	shed.TwiceFailed, shed.Bots, shed.BotsFailed = 3, 2, 1
	if cs := CheckRoom(shed); !cs.OK() {
		t.Errorf("calls not answered: %+v, want passed", cs)
	}
	r := ok
	r.Registered, r.Replays, r.ReplaysRefused, r.ReplaysLapsed = 0, 0, 0, 0
	if c := CheckRoom(r)[0]; c.Status != NotChecked {
		t.Errorf("no replay: %+v, want not checked", c)
	}
}
