package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ticketd/ticketd/bench/procs"
	"github.com/ticketd/ticketd/bench/report"
)

// writeOutputs writes the JSON (a run object for one scenario, the suite
// for all or a list) and the HTML report.
func writeOutputs(c config, s *report.Suite) error {
	if c.JSON != "" {
		var v any = s
		if c.Scenario != "all" && !strings.Contains(c.Scenario, ",") {
			v = single(s, c.Scenario)
		}
		if err := report.WriteJSON(c.JSON, v); err != nil {
			return fmt.Errorf("write %s: %w", c.JSON, err)
		}
		fmt.Fprintf(os.Stderr, "bench: JSON written to %s\n", c.JSON)
	}
	path := c.HTML
	if path == "none" {
		return nil
	}
	if path == "" {
		root, err := procs.ModuleRoot(context.Background())
		if err != nil {
			root = "."
		}
		path = filepath.Join(root, "bench", "out", "report-"+s.StartedAt.Format("20060102-150405")+".html")
	}
	if err := report.WriteHTML(path, s); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(os.Stderr, "bench: HTML report written to %s\n", path)
	return nil
}

// single is the JSON of a one-scenario invocation: the named scenario's
// run with the targets and the other runs (ceilings, baseline, and the
// run flash-durable or flash-replicated compares with) attached.
func single(s *report.Suite, name string) report.Run {
	var main report.Run
	var cmps []report.Run
	for _, r := range s.Runs {
		if r.Target == "ticketd" && r.Scenario == name {
			main = r
		} else {
			cmps = append(cmps, r)
		}
	}
	main.Targets, main.Comparisons = s.Targets, cmps
	main.Notes = append(main.Notes, s.Notes...)
	return main
}
