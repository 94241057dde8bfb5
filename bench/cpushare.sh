#!/usr/bin/env bash
# cpushare.sh: where a flash run's CPU goes. Starts a ticketd of its own
# (built from this tree, or TICKETD_BIN), drives it with the bench's flash
# scenario through -target, and prints the CPU each process spent per
# reserve+confirm pair (from /proc, over the middle of the run): ticketd,
# Redis, Postgres, the load generator. On a 2-core machine the sum is what
# caps throughput.
#
#   bash bench/cpushare.sh [seconds]                 # this tree
#   TICKETD_BIN=/tmp/old/ticketd bash bench/cpushare.sh 12   # another build
#   PPROF=8 bash bench/cpushare.sh                   # also a CPU profile -> bench/out/cpushare.prof
#
# Extra environment for ticketd goes in TICKETD_EXTRA_ENV ("GOGC=800 ..."):
# TICKETD_ENV is ticketd's own mode, development here (no secrets key, no
# processor needed).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-12}
port=18100
db=ticketd_cpushare
out=bench/out
mkdir -p "$out"
bin=$out/ticketd-cpushare
if [ -n "${TICKETD_BIN:-}" ]; then cp "$TICKETD_BIN" "$bin"; else go build -o "$bin" ./cmd/ticketd; fi
go build -o "$out/bench-cpushare" ./bench

psql -qh 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null 2>&1
dburl="postgres://postgres@127.0.0.1:5432/$db?sslmode=disable"
prefix="cpushare:$$:"
# shellcheck disable=SC2086 # TICKETD_EXTRA_ENV is a list of NAME=value words
env TICKETD_ENV=development ${TICKETD_EXTRA_ENV:-} TICKETD_ADDR=127.0.0.1:$port TICKETD_PPROF_ADDR=127.0.0.1:6061 TICKETD_KEY_PREFIX="$prefix" \
	TICKETD_ADMIN_TOKEN=cpushare DATABASE_URL="$dburl" "$bin" >"$out/ticketd-cpushare.log" 2>&1 &
td=$!
cleanup() {
	kill "$td" 2>/dev/null || true
	wait "$td" 2>/dev/null || true
	redis-cli --scan --pattern "$prefix*" | xargs -r -n 1000 redis-cli del >/dev/null
	psql -qh 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
}
trap cleanup EXIT
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done

"$out/bench-cpushare" -target "http://127.0.0.1:$port" -admin-token cpushare -redis-url redis://127.0.0.1:6379 \
	-database-url "$dburl" -key-prefix "$prefix" -scenario flash -duration "${secs}s" -no-baseline -no-ceiling \
	-html none -json "$out/cpushare.json" >"$out/cpushare.out" 2>&1 &
load=$!

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
pgticks() { for p in $(pgrep -u postgres postgres); do awk '{print $14+$15}' "/proc/$p/stat" 2>/dev/null; done | awk '{s+=$1} END{print s+0}'; }
redis=$(pgrep -f 'redis-server' | head -n 1)
sleep 3 # past the provisioning, into the run
t0=$(ticks "$td") r0=$(ticks "$redis") p0=$(pgticks) l0=$(ticks "$load") w0=$(date +%s.%N)
if [ -n "${PPROF:-}" ]; then
	curl -s -o "$out/cpushare.prof" "http://127.0.0.1:6061/debug/pprof/profile?seconds=$PPROF"
else
	sleep $((secs / 2))
fi
t1=$(ticks "$td") r1=$(ticks "$redis") p1=$(pgticks) l1=$(ticks "$load") w1=$(date +%s.%N)
wait "$load" || { cat "$out/cpushare.out"; exit 1; }

python3 - "$out/cpushare.json" "$w0" "$w1" "$t0" "$t1" "$r0" "$r1" "$p0" "$p1" "$l0" "$l1" <<'EOF'
import json, os, sys
res = json.load(open(sys.argv[1]))
rate = res["throughput_per_s"]
w = float(sys.argv[3]) - float(sys.argv[2])
hz = os.sysconf("SC_CLK_TCK")
print(f"flash closed loop: {rate:,.0f} pairs/s, integrity {'ok' if res['integrity_ok'] else 'FAILED'}")
names = ["ticketd", "redis", "postgres", "load generator"]
for i, name in enumerate(names):
    a, b = float(sys.argv[4 + 2 * i]), float(sys.argv[5 + 2 * i])
    cores = (b - a) / hz / w
    print(f"  {name:15s} {cores * 100:4.0f}% of a core  {cores / rate * 1e6:6.1f} us CPU per pair")
EOF
