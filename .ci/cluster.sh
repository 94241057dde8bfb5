#!/usr/bin/env bash
# bash .ci/cluster.sh CMD...: start a local 3-master Redis Cluster, run CMD
# with REDIS_URL naming one of its nodes (rueidis finds the rest from it),
# then stop the cluster and remove its files, whatever CMD did. The exit
# status is CMD's.
#
# The nodes listen on free loopback ports (each port and its cluster bus
# port, port+10000, checked free), keep their files in a temp directory and
# persist nothing: the cluster lives exactly as long as CMD.
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: bash .ci/cluster.sh CMD..." >&2
	exit 2
fi
for bin in redis-server redis-cli; do
	command -v "$bin" >/dev/null || { echo "cluster.sh: $bin is not installed (make services installs it)" >&2; exit 1; }
done

dir=$(mktemp -d -t ticketd-cluster-XXXXXX)
pids=()
stop_nodes() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
}
trap 'stop_nodes; rm -rf "$dir"' EXIT

# listening: the loopback TCP ports something listens on now.
listening() { ss -Htln 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }'; }

# wait_for DESC SECONDS CHECK...: retry CHECK every 0.1 s until it succeeds.
wait_for() {
	local desc=$1 limit=$2
	shift 2
	local i
	for ((i = 0; i < limit * 10; i++)); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	echo "cluster.sh: $desc did not happen in ${limit}s" >&2
	return 1
}
up() { [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]; }

# start_nodes: start three cluster-enabled nodes on free ports. Ports and
# bus ports stay below the kernel's ephemeral range (32768 and up here), so
# an outgoing connection cannot take one meanwhile; a port taken anyway
# (another process raced us) fails that node, and the caller tries again.
start_nodes() {
	local p used
	ports=()
	pids=()
	used=" $(listening | tr '\n' ' ') "
	while [ ${#ports[@]} -lt 3 ]; do
		p=$((10000 + RANDOM % 12000))
		case "$used" in *" $p "* | *" $((p + 10000)) "*) continue ;; esac
		# not one of ours, nor one's bus port, nor with its bus on one of ours
		case " ${ports[*]-} " in *" $p "* | *" $((p + 10000)) "* | *" $((p - 10000)) "*) continue ;; esac
		ports+=("$p")
	done
	for p in "${ports[@]}"; do
		rm -rf "${dir:?}/$p"
		mkdir -p "$dir/$p"
		redis-server --port "$p" --bind 127.0.0.1 --dir "$dir/$p" --daemonize no \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
			--save "" --appendonly no --logfile "$dir/$p/redis.log" &
		pids+=($!)
	done
	local i j
	for i in 0 1 2; do
		for ((j = 0; ; j++)); do
			# A node that could not bind its ports has exited: try again now
			# (checked first, so another server that won the port is not ours).
			kill -0 "${pids[$i]}" 2>/dev/null && [ "$j" -lt 200 ] || return 1
			up "${ports[$i]}" && break
			sleep 0.1
		done
	done
}

ports=()
for try in 1 2 3; do
	if start_nodes; then break; fi
	tail -n 5 "$dir"/*/redis.log >&2 || true
	stop_nodes
	[ "$try" -lt 3 ] || { echo "cluster.sh: could not start the nodes" >&2; exit 1; }
done

addrs=()
for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
# bounded: redis-cli waits for the join without a limit of its own
timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 ||
	{ cat "$dir/create.log" >&2; exit 1; }

# ok: the node says the cluster is ok, knows all three masters and every
# slot is served, so a client starting now sees the final slot map.
ok() {
	local info
	info=$(redis-cli -p "$1" cluster info 2>/dev/null | tr -d '\r')
	grep -qx 'cluster_state:ok' <<<"$info" &&
		grep -qx 'cluster_known_nodes:3' <<<"$info" &&
		grep -qx 'cluster_slots_ok:16384' <<<"$info"
}
for p in "${ports[@]}"; do
	wait_for "cluster_state:ok on $p" 30 ok "$p" || { tail -n 20 "$dir"/*/redis.log >&2; exit 1; }
done

export REDIS_URL="redis://127.0.0.1:${ports[0]}"
echo "cluster.sh: 3-master Redis Cluster on ${addrs[*]}; REDIS_URL=$REDIS_URL" >&2
set +e
"$@"
status=$?
set -e
exit $status
