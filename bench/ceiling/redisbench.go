package ceiling

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// claimScript is the capacity-claim core of lua/order_confirm.lua: read the
// capacity and the sold count of one counter, refuse when too few are
// left, else claim.
const claimScript = `local cap = redis.call('HMGET', KEYS[1], ARGV[1])
local sold = redis.call('HMGET', KEYS[2], ARGV[1])
if tonumber(ARGV[2]) > tonumber(cap[1]) - (tonumber(sold[1]) or 0) then
  return 0
end
redis.call('HINCRBY', KEYS[2], ARGV[1], ARGV[2])
return 1`

// RedisResult is what redis-benchmark measured of the claim script.
type RedisResult struct {
	Command  string  `json:"command"`
	Clients  int     `json:"clients"`
	Requests int64   `json:"requests"`
	PerSec   float64 `json:"requests_per_s"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	Elapsed  time.Duration
}

// ErrNoRedisBenchmark means redis-benchmark is not installed.
var ErrNoRedisBenchmark = errors.New("redis-benchmark is not installed (apt-get install redis-tools)")

// RedisClaim runs EVALSHA of the claim script through redis-benchmark with
// clients connections for about d, on two keys under prefix (a capacity no
// run exhausts), and deletes them afterwards. A short first run sizes the
// request count, since redis-benchmark counts requests, not time.
func RedisClaim(ctx context.Context, rc rueidis.Client, redisURL, prefix string, clients int, d time.Duration) (RedisResult, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return RedisResult{}, ErrNoRedisBenchmark
	}
	conn, err := benchmarkArgs(redisURL)
	if err != nil {
		return RedisResult{}, err
	}
	caps, sold := prefix+"{claim}:cap", prefix+"{claim}:sold"
	loader := rc
	if rc.Mode() == rueidis.ClientModeCluster {
		// redis-benchmark sends every command to the one node it is
		// given, which must own the keys' slot and have the script.
		owner, err := slotOwner(ctx, rc, caps)
		if err != nil {
			return RedisResult{}, err
		}
		if loader = rc.Nodes()[owner]; loader == nil {
			return RedisResult{}, fmt.Errorf("ceiling: cluster node %s, owner of the claim keys' slot, is not among the client's nodes", owner)
		}
		if conn, err = benchmarkArgs(withHost(redisURL, owner)); err != nil {
			return RedisResult{}, err
		}
	}
	sha, err := loader.Do(ctx, loader.B().ScriptLoad().Script(claimScript).Build()).ToString()
	if err != nil {
		return RedisResult{}, fmt.Errorf("ceiling: script load: %w", err)
	}
	if err := rc.Do(ctx, rc.B().Hset().Key(caps).FieldValue().FieldValue("t:tk", "1000000000000000").Build()).Error(); err != nil {
		return RedisResult{}, fmt.Errorf("ceiling: %w", err)
	}
	defer rc.Do(context.WithoutCancel(ctx), rc.B().Del().Key(caps, sold).Build())
	command := []string{"EVALSHA", sha, "2", caps, sold, "t:tk", "1"}

	probe, err := runBenchmark(ctx, bin, conn, clients, 20000, command)
	if err != nil {
		return RedisResult{}, err
	}
	n := max(int64(probe.PerSec*d.Seconds()), 1000)
	res, err := runBenchmark(ctx, bin, conn, clients, n, command)
	res.Command = "EVALSHA <claim script> 2 <caps> <sold> t:tk 1"
	return res, err
}

func runBenchmark(ctx context.Context, bin string, conn []string, clients int, n int64, command []string) (RedisResult, error) {
	args := append(append([]string{}, conn...), "-c", strconv.Itoa(clients), "-n", strconv.FormatInt(n, 10), "--csv")
	args = append(args, command...)
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return RedisResult{}, fmt.Errorf("ceiling: redis-benchmark: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	res, err := ParseCSV(out.Bytes())
	res.Clients, res.Requests, res.Elapsed = clients, n, time.Since(start)
	return res, err
}

// ParseCSV reads redis-benchmark --csv output: a header line naming the
// columns, then one line per test.
func ParseCSV(b []byte) (RedisResult, error) {
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) < 2 {
		return RedisResult{}, fmt.Errorf("ceiling: redis-benchmark output is not the expected CSV: %q", b)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	last := rows[len(rows)-1]
	get := func(name string) float64 {
		i, ok := col[name]
		if !ok || i >= len(last) {
			return 0
		}
		v, _ := strconv.ParseFloat(last[i], 64)
		return v
	}
	res := RedisResult{PerSec: get("rps"), P50Ms: get("p50_latency_ms"), P99Ms: get("p99_latency_ms")}
	if res.PerSec <= 0 {
		return res, fmt.Errorf("ceiling: redis-benchmark reported no rate: %q", b)
	}
	return res, nil
}

// benchmarkArgs turns a redis:// URL into redis-benchmark's connection flags.
func benchmarkArgs(redisURL string) ([]string, error) {
	u, err := url.Parse(redisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil, fmt.Errorf("ceiling: %q is not a redis:// URL", redisURL)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "6379"
	}
	args := []string{"-h", host, "-p", port}
	if u.Scheme == "rediss" {
		args = append(args, "--tls")
	}
	if pw, ok := u.User.Password(); ok {
		args = append(args, "-a", pw)
		if name := u.User.Username(); name != "" && name != "default" {
			args = append(args, "--user", name)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		args = append(args, "--dbnum", db)
	}
	return args, nil
}

// slotOwner is the host:port of the cluster master that holds key's slot.
func slotOwner(ctx context.Context, rc rueidis.Client, key string) (string, error) {
	slot, err := rc.Do(ctx, rc.B().ClusterKeyslot().Key(key).Build()).AsInt64()
	if err != nil {
		return "", fmt.Errorf("ceiling: cluster keyslot: %w", err)
	}
	ranges, err := rc.Do(ctx, rc.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return "", fmt.Errorf("ceiling: cluster slots: %w", err)
	}
	for _, r := range ranges {
		f, err := r.ToArray()
		if err != nil || len(f) < 3 {
			continue
		}
		lo, _ := f[0].AsInt64()
		hi, _ := f[1].AsInt64()
		if slot < lo || slot > hi {
			continue
		}
		master, err := f[2].ToArray()
		if err != nil || len(master) < 2 {
			break
		}
		host, _ := master[0].ToString()
		port, _ := master[1].AsInt64()
		return net.JoinHostPort(host, strconv.FormatInt(port, 10)), nil
	}
	return "", fmt.Errorf("ceiling: no cluster master holds slot %d", slot)
}

// withHost is redisURL with its host:port replaced (credentials kept).
func withHost(redisURL, hostport string) string {
	u, err := url.Parse(redisURL)
	if err != nil {
		return redisURL
	}
	u.Host = hostport
	return u.String()
}
