// Command ticketd runs the ticketing service: the HTTP API and the sync
// worker that writes paid orders to Postgres, in one process by default.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only on TICKETD_PPROF_ADDR
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/ticketd/ticketd/handlers/logrepeat"
)

func main() {
	mode := flag.String("mode", "all", "what to run: all (API and sync worker), api, or worker")
	demo := flag.Bool("demo", false, "apply the demo catalog, print demo credentials and curl lines, and serve the demo shop on TICKETD_DEMO_ADDR")
	flag.Parse()
	cfg, err := loadConfigFor(*demo)
	if err != nil {
		refuse(err)
	}
	if *mode != "all" && *mode != "api" && *mode != "worker" {
		fmt.Fprintln(os.Stderr, "ticketd: -mode must be all, api or worker")
		os.Exit(2)
	}
	log, flushLog := newLogger(os.Stderr, cfg.LogFormat)
	defer flushLog()
	slog.SetDefault(log)

	if os.Getenv("GOGC") == "" {
		// The heap is small (the state lives in Redis) and garbage is
		// per-request; collecting at 4x the live heap instead of 2x halves
		// GC work for a few MB. GOGC overrides it.
		debug.SetGCPercent(400)
	}
	if cfg.PprofAddr != "" {
		// Profiling on its own listener (loopback in practice), never on the
		// public API address.
		go func() {
			log.Info("pprof listening", "addr", cfg.PprofAddr)
			if err := http.ListenAndServe(cfg.PprofAddr, nil); err != nil {
				log.Error("pprof", "err", err)
			}
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = run(ctx, cfg, options{API: *mode != "worker", Worker: *mode != "api", Demo: *demo, DemoSite: *demo && *mode != "worker",
		MemoryLimit: os.Getenv("GOMEMLIMIT") == ""}, log, nil)
	if err != nil {
		log.Error("ticketd stopped", "err", err)
		flushLog()
		os.Exit(1)
	}
}

// newLogger is ticketd's logger: text (or, with format "json", JSON) lines
// on w, a message repeated within a second collapsed into one line with
// its count (handlers/logrepeat). flush writes the counts still pending.
func newLogger(w io.Writer, format string) (log *slog.Logger, flush func()) {
	var h slog.Handler = slog.NewTextHandler(w, nil)
	if format == "json" {
		h = slog.NewJSONHandler(w, nil)
	}
	// A line naming a payment (one to refund) is never folded into
	// another payment's.
	r := logrepeat.New(h, logrepeat.Options{Distinct: []string{"payment"}})
	return slog.New(r), r.Flush
}

// refuse ends a start the configuration forbids with one log line naming
// the variable (in the TICKETD_LOG_FORMAT asked for) and exit status 2.
func refuse(err error) {
	log, _ := newLogger(os.Stderr, os.Getenv("TICKETD_LOG_FORMAT"))
	log.Error("ticketd refuses to start: " + err.Error())
	os.Exit(2)
}
