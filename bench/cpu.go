package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/bench/cpuuse"
	"github.com/ticketd/ticketd/bench/redismem"
	"github.com/ticketd/ticketd/bench/report"
)

// meter measures the given processes together with this deployment's
// Redis and the Postgres of databaseURL when they run on this machine, and
// the load generator; nil when the system has no /proc. The comparisons
// list Redis too: its 0.00 shows nothing else was running.
func (d *deployment) meter(ctx context.Context, databaseURL string, procs ...cpuuse.Source) *cpuuse.Meter {
	if !cpuuse.Supported() {
		return nil
	}
	return meterOf(databaseURL, append(procs, localRedis(ctx, d.redis, d.redisURL)...)...)
}

// meterOf measures the given processes, the Postgres of databaseURL when
// it runs on this machine, and the load generator; nil when the system
// has no /proc.
func meterOf(databaseURL string, procs ...cpuuse.Source) *cpuuse.Meter {
	if !cpuuse.Supported() {
		return nil
	}
	if isLocalPostgres(databaseURL) {
		// Every Postgres process: one per connection, the WAL writer and
		// the rest. Other databases' work counts too; the bench runs one
		// thing at a time.
		procs = append(procs, cpuuse.Command("postgres", "postgres"))
	}
	return cpuuse.New(append(procs, cpuuse.Self("load generator"))...)
}

// localRedis is the Redis processes to meter: the one Redis, or on a
// Redis Cluster each node on this machine, by address ("redis
// 127.0.0.1:7001"), so the node that holds a hot event's slot shows apart
// from the others.
func localRedis(ctx context.Context, rc rueidis.Client, redisURL string) []cpuuse.Source {
	if rc == nil {
		return nil
	}
	if rc.Mode() != rueidis.ClientModeCluster {
		if pid, ok := localRedisPID(ctx, rc, redisURL); ok {
			return []cpuuse.Source{cpuuse.Process("redis", pid)}
		}
		return nil
	}
	nodes := rc.Nodes()
	addrs := slices.Sorted(maps.Keys(nodes))
	var out []cpuuse.Source
	for _, addr := range addrs {
		if pid, ok := localRedisPID(ctx, nodes[addr], "redis://"+addr); ok {
			out = append(out, cpuuse.Process("redis "+addr, pid))
		}
	}
	return out
}

// localRedisPID is the pid Redis reports (INFO server) when it runs on this
// machine: a loopback address, and that pid is a redis process here.
func localRedisPID(ctx context.Context, rc rueidis.Client, redisURL string) (int, bool) {
	if rc == nil {
		return 0, false
	}
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil || len(opt.InitAddress) == 0 || !isLoopback(opt.InitAddress[0]) {
		return 0, false
	}
	v, err := redismem.InfoField(ctx, rc, "server", "process_id")
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	comm, err := os.ReadFile("/proc/" + v + "/comm")
	return pid, err == nil && strings.Contains(string(comm), "redis")
}

// isLocalPostgres reports whether a Postgres URL or DSN names this machine.
func isLocalPostgres(dsn string) bool {
	if dsn == "" {
		return false
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return false
	}
	return strings.HasPrefix(cfg.Host, "/") || isLoopback(net.JoinHostPort(cfg.Host, "0"))
}

// isLoopback reports whether host:port names this machine's loopback.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// otherRow is the share of the machine neither the metered processes nor the
// kernel's interrupt work explain: other users of a shared machine (and
// the kernel's threads).
const otherRow = "other (other users of the machine)"

// otherWarnCores is how much of the machine other work may take before a
// run is flagged as measured on a busy machine.
const otherWarnCores = 0.3

// cpuShares turns what a meter read into report shares per unit of r's
// throughput, with the share of the machine the listed processes do not
// explain.
func cpuShares(shares []cpuuse.Share, throughput float64) []report.CPUShare {
	out := make([]report.CPUShare, 0, len(shares)+1)
	add := func(name string, cores float64) {
		c := report.CPUShare{Process: name, Cores: cores}
		if throughput > 0 {
			c.MicrosPerUnit = cores / throughput * 1e6
		}
		out = append(out, c)
	}
	var listed float64
	for _, s := range shares {
		add(s.Process, s.Cores)
		if s.Process != cpuuse.Machine {
			listed += s.Cores
			continue
		}
		add(otherRow, max(s.Cores-listed, 0))
	}
	return out
}

// busyMachine is the warning of a run during which other work took a
// good part of the machine; empty otherwise.
func busyMachine(shares []report.CPUShare, cpus int) string {
	for _, s := range shares {
		if s.Process == otherRow && s.Cores > otherWarnCores {
			return fmt.Sprintf("other work took %.2f of the machine's %d cores during this run (other users of a shared machine): "+
				"the run had less CPU than the machine has, so its throughput is lower, and a comparison with another run is less sure", s.Cores, cpus)
		}
	}
	return ""
}
