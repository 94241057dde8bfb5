// Command ticketd runs the ticketing service: the HTTP API and the sync
// worker that writes paid orders to Postgres, in one process by default.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only on TICKETD_PPROF_ADDR
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	mode := flag.String("mode", "all", "what to run: all (API and sync worker), api, or worker")
	demo := flag.Bool("demo", false, "apply the demo catalog, print demo credentials and curl lines, and serve the demo shop on TICKETD_DEMO_ADDR")
	flag.Parse()
	cfg, err := loadConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ticketd:", err)
		os.Exit(2)
	}
	if *mode != "all" && *mode != "api" && *mode != "worker" {
		fmt.Fprintln(os.Stderr, "ticketd: -mode must be all, api or worker")
		os.Exit(2)
	}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(os.Stderr, nil)
	}
	log := slog.New(h)
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
		os.Exit(1)
	}
}
