package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// readmeStorefrontSection is the README section of the storefront flow.
const readmeStorefrontSection = "## The storefront flow, with curl"

// TestReadmeStorefrontFlow runs the README's storefront blocks in one bash
// from the repository's root, against a ticketd with the demo catalog, as a
// new user would: register, pay on the hosted page (the test processor's
// signed webhook confirms), read the registration, take a ticket's QR text
// from the buyer's e-mail in the mail folder and verify it with ticketctl
// and the published key. Every step succeeds and every "# ->" line matches.
func TestReadmeStorefrontFlow(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sed", "awk", "tr", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	readme := readREADME(t)
	steps := readmeSteps(t, shellBlocks(t, readme, readmeStorefrontSection))
	checkAllUsed(t, steps)

	// The hosted page's links and the processor's webhook go to
	// TICKETD_APP_URL, so it must be this ticketd's own address.
	addr := freeAddr(t)
	cfg := localConfig(t)
	cfg.Addr, cfg.AppURL = addr, "http://"+addr
	t.Setenv("TICKETD_MAIL_DIR", t.TempDir())
	base := startTicketd(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", "-c", renderSteps(steps, base))
	cmd.Dir = "../.." // go run ./cmd/ticketctl
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("the README's blocks failed: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	outs := stepOutputs(t, stdout.String(), len(steps))
	for i, st := range steps {
		for _, line := range strings.Split(outs[i], "\n") {
			if strings.HasPrefix(line, "{") && !strings.HasPrefix(line, `{"success":true`) {
				t.Errorf("step %q answered a failure:\n%s", st.cmd, line)
			}
		}
		if st.expect != "" && !expectRE(st.expect).MatchString(outs[i]) {
			t.Errorf("step %q\nanswered %s\nthe README says # -> %s", st.cmd, outs[i], st.expect)
		}
	}
}
