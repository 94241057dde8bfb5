package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// readmeFlowSection is the README section whose shell blocks a new user
// pastes, in order, into one bash.
const readmeFlowSection = "## The partner flow, with curl"

// readmeBase is the base URL the README's blocks use; the test points it at
// its own ticketd.
const readmeBase = "http://localhost:8080"

// TestReadmePartnerFlow runs the shell blocks of the README's partner flow
// in one bash against a ticketd with the demo catalog, as a new user would:
// every step succeeds, each "# ->" line matches the answer of the command
// above it ("..." standing for anything), no variable or function is left
// unused, and every order the blocks made ends paid.
func TestReadmePartnerFlow(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "openssl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	blocks := shellBlocks(t, readREADME(t), readmeFlowSection)
	steps := readmeSteps(t, blocks)
	checkAllUsed(t, steps)

	base := startTicketd(t, localConfig(t))
	script := renderSteps(steps, base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("the README's blocks failed: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}

	outs := stepOutputs(t, stdout.String(), len(steps))
	for i, st := range steps {
		out := outs[i]
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "{") && !strings.HasPrefix(line, `{"success":true`) {
				t.Errorf("step %q answered a failure:\n%s", st.cmd, line)
			}
		}
		if st.expect == "" {
			continue
		}
		if !expectRE(st.expect).MatchString(out) {
			t.Errorf("step %q\nanswered %s\nthe README says # -> %s", st.cmd, out, st.expect)
		}
	}

	// Every order the blocks made is paid, asked apart from the blocks.
	orders := map[string]bool{}
	for _, m := range regexp.MustCompile(`"orderId":"(o[^"]+)"`).FindAllStringSubmatch(stdout.String(), -1) {
		orders[m[1]] = true
	}
	var ga, seated int
	h := map[string]string{"x-service-key": "ck_demo", "x-service-secret": "cs_demo_secret", "content-type": "application/json"}
	for id := range orders {
		switch {
		case strings.HasSuffix(id, ".ev_demo_ga"):
			ga++
		case strings.HasSuffix(id, ".ev_demo_seated"):
			seated++
		}
		st, body := call(t, "POST", base+"/v1/channel/orders/status", h, fmt.Sprintf(`{"orderId":%q}`, id))
		if st != 200 || !strings.Contains(body, `"status":"paid"`) {
			t.Errorf("order %s made by the README's blocks: %d %s, want paid", id, st, body)
		}
	}
	if ga == 0 || seated == 0 {
		t.Errorf("the blocks made %d GA and %d seated orders, want at least one of each:\n%s", ga, seated, stdout.String())
	}
}

func readREADME(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// shellBlocks returns the ```sh blocks of one "## " section of a Markdown
// text.
func shellBlocks(t *testing.T, md, heading string) []string {
	t.Helper()
	i := strings.Index(md, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no section %q", heading)
	}
	section := md[i+len(heading)+2:]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```sh\n(.*?)^```$").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatalf("section %q has no ```sh block", heading)
	}
	return blocks
}

// step is one command of the blocks (continuation lines joined) and the
// answer its "# ->" line promises, if any.
type step struct {
	cmd    string
	expect string
}

func readmeSteps(t *testing.T, blocks []string) []step {
	t.Helper()
	if !strings.Contains(strings.Join(blocks, "\n"), readmeBase) {
		t.Fatalf("the blocks do not use %s, which the test points at its ticketd", readmeBase)
	}
	var steps []step
	for _, b := range blocks {
		lines := strings.Split(b, "\n")
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
				i++
				line += "\n" + lines[i]
			}
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "# -> "):
				if len(steps) == 0 || steps[len(steps)-1].expect != "" {
					t.Fatalf("%q follows no command", trimmed)
				}
				steps[len(steps)-1].expect = strings.TrimPrefix(trimmed, "# -> ")
			case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			default:
				steps = append(steps, step{cmd: line})
			}
		}
	}
	return steps
}

const stepMarker = "@@readme-step "

// renderSteps is the script bash runs: strict mode, then each command after
// a marker line that lets the output be cut per command.
func renderSteps(steps []step, base string) string {
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	for i, st := range steps {
		fmt.Fprintf(&b, "printf '\\n%s%d\\n'\n", stepMarker, i)
		b.WriteString(strings.ReplaceAll(st.cmd, readmeBase, base))
		b.WriteString("\n")
	}
	return b.String()
}

// stepOutputs cuts bash's output at the markers: one trimmed output per
// step.
func stepOutputs(t *testing.T, out string, n int) []string {
	t.Helper()
	outs := make([]string, n)
	parts := strings.Split(out, "\n"+stepMarker)
	if len(parts) != n+1 {
		t.Fatalf("ran %d of %d steps:\n%s", len(parts)-1, n, out)
	}
	for i, p := range parts[1:] {
		num, rest, _ := strings.Cut(p, "\n")
		if num != fmt.Sprint(i) {
			t.Fatalf("step marker %q, want %d", num, i)
		}
		outs[i] = strings.TrimSpace(rest)
	}
	return outs
}

// expectRE matches an answer against a "# ->" line: literal, "..." for
// anything.
func expectRE(expect string) *regexp.Regexp {
	parts := strings.Split(expect, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`)
}

// checkAllUsed fails on a variable assigned or a function defined in the
// blocks that no command uses.
func checkAllUsed(t *testing.T, steps []step) {
	t.Helper()
	var all strings.Builder
	for _, st := range steps {
		all.WriteString(st.cmd + "\n")
	}
	text := all.String()
	for _, m := range regexp.MustCompile(`(?m)(?:^|[;\s(])([A-Za-z_][A-Za-z0-9_]*)=`).FindAllStringSubmatch(text, -1) {
		if name := m[1]; !strings.Contains(text, "$"+name) && !strings.Contains(text, "${"+name) {
			t.Errorf("the README's blocks set %s and never use it", name)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\(\)`).FindAllStringSubmatch(text, -1) {
		if name := m[1]; !strings.Contains(text, "$("+name) && !strings.Contains(text, "| "+name+" ") {
			t.Errorf("the README's blocks define %s() and never call it", name)
		}
	}
}

// Issue 21: the README names the demo's pages (the seated one among them)
// and says which demo events are storefront only. Each claim holds: the
// pages answer, the partner surface answers EVENT_NOT_FOUND for the
// storefront-only events, and the storefront sells them.
func TestReadmeDemoPagesAndStorefrontOnlyEvents(t *testing.T) {
	readme := readREADME(t)
	for _, claim := range []string{"/seated.html?event=ev_demo_seated", "/event.html?event=ev_demo_ga",
		"`ev_demo_room`, `ev_demo_room_seated`, `ev_demo_shows`, `ev_demo_matinee` and\n`ev_demo_free` are **storefront only**", "answers `404 EVENT_NOT_FOUND` for them"} {
		if !strings.Contains(readme, claim) {
			t.Errorf("the README does not say %q", claim)
		}
	}
	s := startShopWith(t, func(c *config) { c.DemoAddr = freeAddr(t) })
	for _, page := range []string{"/seated.html?event=ev_demo_seated", "/event.html?event=ev_demo_ga", "/event.html?event=ev_demo_free",
		"/seated.html?event=ev_demo_room_seated", "/event.html?event=ev_demo_shows", "/event.html?event=ev_demo_matinee"} {
		if st, body := call(t, "GET", s.shop+page, nil, ""); st != 200 || !strings.Contains(body, "<html") {
			t.Errorf("shop %s: %d %.100s", page, st, body)
		}
	}
	partner := map[string]string{"x-service-key": "ck_demo", "x-service-secret": "cs_demo_secret"}
	front := map[string]string{"x-service-key": "pk_demo", "Origin": s.shop}
	for ev, sold := range map[string]bool{"ev_demo_ga": true, "ev_demo_seated": true, "ev_demo_room": false, "ev_demo_room_seated": false, "ev_demo_shows": false, "ev_demo_matinee": false, "ev_demo_free": false} {
		st, body := call(t, "GET", s.api+"/v1/channel/events/"+ev, partner, "")
		if sold && st != 200 || !sold && (st != 404 || !strings.Contains(body, `"code":"EVENT_NOT_FOUND"`)) {
			t.Errorf("partner surface, %s: %d %.200s; want sold by ch_demo: %v", ev, st, body, sold)
		}
		if st, body := call(t, "GET", s.api+"/v1/storefront/events/"+ev, front, ""); st != 200 {
			t.Errorf("storefront, %s: %d %.200s", ev, st, body)
		}
	}
}
