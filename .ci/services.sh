#!/usr/bin/env bash
# Start the Redis (127.0.0.1:6379) and PostgreSQL (127.0.0.1:5432, user
# postgres without a password) that ticketd and its tests use, unless they
# already answer; install them with apt-get where they are missing. Running
# it again while both answer changes nothing.
set -euo pipefail

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi

updated=""
apt_install() {
	if ! command -v apt-get >/dev/null; then
		echo "services: $* missing and no apt-get here; install it by hand" >&2
		exit 1
	fi
	echo "services: installing $*"
	if [ -z "$updated" ]; then
		$sudo apt-get update -qq
		updated=1
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

redis_up() { command -v redis-cli >/dev/null && [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }
pg_up() { command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; }
pg_login() { psql -w -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; }

wait_for() {
	local name=$1
	shift
	for _ in $(seq 1 60); do
		if "$@"; then
			return 0
		fi
		sleep 0.5
	done
	echo "services: $name does not answer after 30s" >&2
	exit 1
}

# Redis: ephemeral, nothing saved to disk.
if ! redis_up; then
	if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
		apt_install redis-server
	fi
	if ! redis_up; then # the package may have started one
		$sudo mkdir -p /var/lib/redis /var/log/redis
		echo "services: starting redis-server"
		$sudo redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
			--dir /var/lib/redis --logfile /var/log/redis/ci.log
	fi
	wait_for Redis redis_up
fi

# PostgreSQL: the newest installed cluster "main".
installed_pg=""
if ! pg_up; then
	if ! command -v pg_ctlcluster >/dev/null || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
		apt_install postgresql
		installed_pg=1
	fi
	if ! pg_up; then
		version=$(ls /etc/postgresql | sort -V | tail -n 1)
		echo "services: starting PostgreSQL $version"
		$sudo pg_ctlcluster --skip-systemctl-redirect "$version" main start ||
			echo "services: pg_ctlcluster failed; waiting in case it is starting anyway" >&2
	fi
	wait_for PostgreSQL pg_up
fi

# Tests connect as postgres over TCP without a password. A fresh install asks
# for one; on a machine this script set up (or in CI) trust loopback instead.
if ! pg_login; then
	version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
	hba=/etc/postgresql/$version/main/pg_hba.conf
	if [ -z "$installed_pg" ] && [ "${CI:-}" != true ] || [ ! -f "$hba" ]; then
		echo "services: PostgreSQL answers but refuses postgres@127.0.0.1 without a password;" >&2
		echo "services: allow it in pg_hba.conf or set DATABASE_URL" >&2
		exit 1
	fi
	echo "services: trusting postgres on loopback in $hba"
	$sudo sed -i '1i host all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust' "$hba"
	$sudo pg_ctlcluster --skip-systemctl-redirect "$version" main reload
	wait_for "PostgreSQL login" pg_login
fi

echo "services: Redis and PostgreSQL are up"
