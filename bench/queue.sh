#!/bin/sh
# bench/queue.sh [ITEMS] [WORKERS]: the distributed batch's benchmark
# (docs/distributed-batch.md#benchmark). ITEMS (default 1000000) go once
# through one `loadgen batch` and once through WORKERS (default 4)
# `loadgen batch work` processes sharing a job on a private redis-server,
# both against one mockllm at 1 µs a token; it prints each side's wall and
# CPU time (the workers' and Redis's), the queue's CPU per item over the
# single process, and collect's. Needs redis-server; everything it starts
# listens on 127.0.0.1 and is stopped on exit.
set -eu
items=${1:-1000000}
workers=${2:-4}
dir=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
go build -o "$dir/loadgen" ./cmd/loadgen
go build -o "$dir/mockllm" ./cmd/mockllm
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rport=$(free_port)
redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no >"$dir/redis.log" 2>&1 &
rpid=$!
pids="$pids $rpid"
mport=$(free_port)
"$dir/mockllm" --addr "127.0.0.1:$mport" --per-token-latency 1us >"$dir/mock.log" 2>&1 &
pids="$pids $!"
sleep 1
R="redis://127.0.0.1:$rport/0"
M="http://127.0.0.1:$mport"
awk -v n="$items" 'BEGIN { for (i = 0; i < n; i++) printf "{\"id\": \"t-%d\", \"prompt\": \"p %d\", \"max_tokens\": 1}\n", i, i }' >"$dir/in.jsonl"
export ANTHROPIC_API_KEY=
cpu() { awk '{ print ($14 + $15) / 100 }' "/proc/$1/stat"; }

echo "single process, $items items:"
/usr/bin/time -f "  wall %e s, cpu %U+%S s, max rss %M KB" "$dir/loadgen" batch --input "$dir/in.jsonl" --output "$dir/single.jsonl" \
	--base-url "$M" --strategy semaphore:n=64 --workers 128 --state-file= >/dev/null 2>"$dir/single.time"
tail -1 "$dir/single.time"

echo "enqueue:"
/usr/bin/time -f "  wall %e s, cpu %U+%S s, max rss %M KB" "$dir/loadgen" batch enqueue --queue "$R" --name bench --input "$dir/in.jsonl" >/dev/null 2>"$dir/enq.time"
tail -1 "$dir/enq.time"

echo "$workers workers:"
r0=$(cpu "$rpid")
start=$(date +%s.%N)
wp=""
for i in $(seq 1 "$workers"); do
	/usr/bin/time -f "%U %S %M" "$dir/loadgen" batch work --queue "$R" --name bench --output "$dir/w$i.jsonl" \
		--base-url "$M" --strategy semaphore:n=16 --workers 32 --state-file= >/dev/null 2>"$dir/w$i.time" &
	wp="$wp $!"
done
for p in $wp; do wait "$p"; done
end=$(date +%s.%N)
r1=$(cpu "$rpid")
for i in $(seq 1 "$workers"); do tail -1 "$dir/w$i.time"; done | awk -v wall="$(echo "$end - $start" | bc)" -v redis="$(echo "$r1 - $r0" | bc)" \
	-v single="$(tail -1 "$dir/single.time" | sed 's/.*cpu \([0-9.]*\)+\([0-9.]*\) s.*/\1 \2/')" -v n="$items" '
	{ cpu += $1 + $2; if ($3 > rss) rss = $3 }
	END { split(single, s, " "); sc = s[1] + s[2]
	      printf "  wall %.1f s, workers cpu %.1f s, redis cpu %.1f s, max worker rss %d KB\n", wall, cpu, redis, rss
	      printf "  cpu per item: single %.1f us, queue %.1f us (redis %.1f us): overhead %.1f us an item\n", sc / n * 1e6, (cpu + redis) / n * 1e6, redis / n * 1e6, (cpu + redis - sc) / n * 1e6 }'
echo "collect:"
/usr/bin/time -f "  wall %e s, cpu %U+%S s, max rss %M KB" "$dir/loadgen" batch collect --input "$dir/in.jsonl" --output "$dir/all.jsonl" "$dir"/w*.jsonl 2>&1 | tail -2
