#!/usr/bin/env bash
# Benchmark of `loopguard serve` (not a test): wrk against one release server, in one run:
#   GET /healthz (the HTTP floor), POST /v1/events with the memory store, and with Redis
#   (a redis-server of its own on a free loopback port), and with a dashboard client and a
#   webhook configured; then memory per idle session.
# Usage: scripts/bench-serve.sh [SECONDS] [CONNECTIONS]   (default 10 s, 32 connections)
# Prints each run's CPU time per request of the server (and of redis-server, and of wrk): where
# the time goes; the share of the machine left idle (waiting, not computing); and the Redis
# ratio both as measured and as the CPU times alone give it (steadier on a shared machine).
# Needs wrk and redis-server (apt-get install wrk; scripts/setup-redis.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
conns=${2:-32}
threads=2
command -v wrk >/dev/null || { echo "bench-serve.sh: wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "bench-serve.sh: redis-server is missing (scripts/setup-redis.sh)" >&2; exit 1; }
# LOOPGUARD_BIN=path: benchmark that binary (another build, to compare) instead of this tree's.
if [ -n "${LOOPGUARD_BIN:-}" ]; then
  bin=$LOOPGUARD_BIN
else
  cargo build --release -q -p loopguard
  bin=target/release/loopguard
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

addr=""
start_server() { # args... ; sets $addr (not in a subshell: the pid must reach the cleanup)
  local log="$work/serve.$RANDOM.log"
  : > "$log" # exists before the first grep, whenever the server opens it
  "$bin" serve --listen 127.0.0.1:0 "$@" 2>"$log" &
  pids+=($!)
  for _ in $(seq 100); do
    if grep -q "listening on" "$log"; then
      addr=$(grep -o 'http://[0-9.:]*' "$log" | head -1 | sed 's#http://##')
      return
    fi
    sleep 0.05
  done
  echo "server did not start: $(cat "$log")" >&2; exit 1
}

cat > "$work/events.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = 0
-- a distinct id per wrk thread (math.random is seeded alike in every thread)
local tid = tostring({}):sub(-8)
request = function()
  n = n + 1
  -- 1000 sessions per thread; calls with fresh arguments, so every session keeps a full
  -- 30-call history and every call is checked against it
  local body = '{"type":"call","session":"bench-' .. tid .. '-' .. (n % 1000) ..
    '","tool":"read","args":{"path":"/src/file-' .. n .. '.rs"}}'
  return wrk.format(nil, nil, nil, body)
end
LUA

# CPU time (user + system, in clock ticks) a process has used so far.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# CPU time (microseconds) of this shell's finished children (wrk, once a run returns).
# (`times` runs in this shell, not in a subshell, whose children would be its own.)
children_us() { # variable
  times > "$work/times"
  printf -v "$1" '%s' "$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } printf "%d", t * 1000000 }' "$work/times")"
}
# Idle and total clock ticks of the whole machine so far (the idle share of a run).
machine() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
hz=$(getconf CLK_TCK)
watch_pids="" # "label:pid ..." whose CPU time per request run_wrk reports

run_wrk() { # id label url [script]
  local id=$1; shift
  local out before=() p
  for p in $watch_pids; do before+=("$(ticks "${p#*:}")"); done
  local wrk0 idle0 all0 idle1 all1
  children_us wrk0
  read -r idle0 all0 < <(machine)
  if [ -n "${3:-}" ]; then
    out=$(wrk -t"$threads" -c"$conns" -d"${secs}s" --latency -s "$3" "$2")
  else
    out=$(wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "$2")
  fi
  read -r idle1 all1 < <(machine)
  local rps p50 p99 non2xx
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/ {print $5}')
  local reqs cpu="" i=0
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  # Where the time goes: CPU microseconds per request of each watched process and of
  # wrk; and how much of the machine stayed idle (above a few %, the run was held back
  # by waiting, not by CPU).
  local n=$((reqs > 0 ? reqs : 1)) us total wrk1
  children_us wrk1
  total=$(( (wrk1 - wrk0) / n ))
  for p in $watch_pids; do
    us=$(( ($(ticks "${p#*:}") - before[i]) * 1000000 / hz / n ))
    cpu+=" ${p%%:*} $us us"
    total=$((total + us))
    i=$((i + 1))
  done
  cpu+=" wrk $(( (wrk1 - wrk0) / n )) us"
  printf '%-34s %12s req/s   p50 %8s   p99 %8s   non-2xx %s   CPU/request:%s   idle %s%%\n' "$1" "$rps" "$p50" "$p99" "${non2xx:-0}" "$cpu" "$(( (idle1 - idle0) * 100 / (all1 - all0 > 0 ? all1 - all0 : 1) ))"
  echo "$rps" > "$work/rps.$id"
  echo "$total" > "$work/cpu.$id"
  echo "${reqs:-0}" > "$work/reqs.$id"
}

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >/dev/null &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done 2>/dev/null || sleep 1

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "wrk: $threads threads, $conns connections, ${secs}s each; release build"
rpid=${pids[-1]}
start_server --store memory; mem=$addr; mpid=${pids[-1]}
start_server --store "redis://127.0.0.1:$rport/0"; red=$addr; spid=${pids[-1]}
watch_pids="server:$mpid"
run_wrk health_mem "GET /healthz (memory server)" "http://$mem/healthz"
run_wrk events_mem "POST /v1/events, memory store" "http://$mem/v1/events" "$work/events.lua"
# The same memory server with the fleet view in use: a webhook configured (a receiver of its
# own on loopback that answers 200) and a dashboard client on its live stream
# (/v1/dashboard/stream: pushed after decisions, at most every 0.5 s). The event path should
# not notice either.
hport=$(free_port)
python3 - "$hport" <<'PY' &
import sys, http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
pids+=($!)
start_server --store memory --alert-webhook "http://127.0.0.1:$hport/alerts"; fleet=$addr; fpid0=${pids[-1]}
curl -sN -o "$work/stream.txt" "http://$fleet/v1/dashboard/stream" &
pids+=($!)
watch_pids="server:$fpid0"
run_wrk health_fleet "GET /healthz (dashboard + webhook)" "http://$fleet/healthz"
run_wrk events_fleet "POST /v1/events, dashboard + webhook" "http://$fleet/v1/events" "$work/events.lua"
kill "${pids[-1]}" 2>/dev/null || true
echo "dashboard stream: $(grep -c '^event: fleet' "$work/stream.txt") pushes during the two runs"
watch_pids="server:$spid redis:$rpid"
run_wrk health_redis "GET /healthz (redis server)" "http://$red/healthz"
redis-cli -p "$rport" config resetstat >/dev/null
run_wrk events_redis "POST /v1/events, Redis store" "http://$red/v1/events" "$work/events.lua"
# Inside Redis during the events line: the compare-and-set script's time per call, and how
# many updates a read of Redis's carried (the batches; see bench/history/replay-and-serve-redis.md).
redis-cli -p "$rport" info all | tr -d '\r' | awk -F'[:,=]' -v n="$(cat "$work/reqs.events_redis")" '
  /^cmdstat_evalsha:/ {us = $7}
  /^total_reads_processed:/ {reads = $2}
  END {printf "inside Redis: EVALSHA %s us a call, %.1f events a read\n", us, n / (reads > 0 ? reads : 1)}'
watch_pids=""
python3 - "$work" <<'PY'
import sys, glob, os
w = sys.argv[1]
r = {os.path.basename(p)[4:]: float(open(p).read()) for p in glob.glob(w + "/rps.*")}
print(f"memory store: {r['events_mem']/r['health_mem']:.2f} x /healthz (target >= 0.5)")
print(f"Redis store:  {r['events_redis']/r['health_redis']:.2f} x /healthz (target >= 0.5, p99 < 5 ms)")
fleet = r['events_fleet'] / r['health_fleet']
print(f"memory store with a dashboard client and a webhook: {fleet:.2f} x /healthz, "
      f"{fleet / (r['events_mem'] / r['health_mem']):.2f} of the plain memory store's ratio (target: within noise of 1)")
# The same ratio from CPU time alone (server + redis-server + wrk per request): what the
# two lines would give with every core busy. It moves much less with other load than the
# measured ratio, and says how far the costs are from the target.
c = {os.path.basename(p)[4:]: float(open(p).read()) for p in glob.glob(w + "/cpu.*")}
print(f"Redis store, from CPU per request: {c['health_redis']/max(c['events_redis'], 1):.2f} x /healthz "
      f"({c['events_redis']:.0f} us an event against {c['health_redis']:.0f} us a /healthz, all processes)")
PY

# Memory per idle session: a fresh memory server, RSS before and after 20 000 sessions of
# one call + outcome each.
start_server --store memory; fresh=$addr
fpid=${pids[-1]}
rss() { awk '/VmRSS/ {print $2}' "/proc/$fpid/status"; }
before=$(rss)
python3 - "$fresh" <<'PY'
import sys, http.client
host, port = sys.argv[1].split(":")
c = http.client.HTTPConnection(host, int(port))
for base in range(0, 20000, 500):
    body = "".join(
        '{"type":"call","session":"idle-%d","tool":"read","args":{"path":"/a/b.txt"}}\n'
        '{"type":"outcome","session":"idle-%d","tool":"read","args":{"path":"/a/b.txt"},"result":"file contents"}\n' % (i, i)
        for i in range(base, base + 500))
    c.request("POST", "/v1/events", body, {"Content-Type": "application/x-ndjson"})
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
PY
after=$(rss)
echo "memory per idle session (1 call + 1 outcome), memory store: $(( (after - before) * 1024 / 20000 )) bytes (RSS ${before} -> ${after} KiB for 20000 sessions)"
