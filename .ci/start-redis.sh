#!/usr/bin/env bash
# Starts the Redis server that the sharedlimit tests use, and prints its URL
# on stdout (the only line this script writes there):
#
#	export RATELAB_REDIS_URL=$(.ci/start-redis.sh)
#
# It installs Debian's redis-server when missing, then starts one bound to
# loopback on a fixed test port (RATELAB_REDIS_PORT, default 6399) with no
# persistence, and waits until it answers PING. Safe to run twice: a server
# already answering on the port is reused. The tests also start private
# servers of their own (to kill them) with the same binary.
set -euo pipefail

PORT="${RATELAB_REDIS_PORT:-6399}"
HOST=127.0.0.1

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		SUDO="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update >&2
	$SUDO apt-get install -y redis-server >&2
fi

ping() { redis-cli -h "$HOST" -p "$PORT" ping 2>/dev/null | grep -q PONG; }

if ! ping; then
	# Debian's package may start a server on 6379 as a service; ours is
	# separate, private to the tests and gone with the machine.
	redis-server --bind "$HOST" --port "$PORT" --save '' --appendonly no \
		--daemonize yes --logfile "/tmp/ratelab-redis-$PORT.log" \
		--pidfile "/tmp/ratelab-redis-$PORT.pid" >&2
	for _ in $(seq 1 100); do
		ping && break
		sleep 0.1
	done
	if ! ping; then
		echo "start-redis: redis-server on $HOST:$PORT does not answer PING; see /tmp/ratelab-redis-$PORT.log" >&2
		exit 1
	fi
fi

echo "redis://$HOST:$PORT/0"
