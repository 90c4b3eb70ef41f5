#!/usr/bin/env bash
# Replay throughput against external baselines, measured in the same run.
#
#   scripts/bench-baselines.sh [EVENTS] [BIG_EVENTS]
#
# 1. A stream of EVENTS events (default 1 000 000) with ~100-byte results:
#    `loopguard replay --json` versus a Python pass `json.loads` + `json.dumps(sort_keys=True)`
#    over the same file (the cheapest canonicalisation a script could do).
# 2. A stream of BIG_EVENTS events (default 2 000) with ~100 KB results:
#    `loopguard replay --json` versus `openssl dgst -sha256` over the same file (hashing every
#    byte once is the floor).
# Each command runs 3 times; the best CPU time (user+sys) is kept. Prints the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-1000000}
big=${2:-2000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo build --release -q -p loopguard
cargo build --release -q -p loopguard-replay --example gen_events
bin=target/release/loopguard
gen=target/release/examples/gen_events
cfg=examples/openclaw.json5

"$gen" "$events" 100 > "$tmp/small.jsonl"
"$gen" "$big" 100000 > "$tmp/big.jsonl"

cat > "$tmp/baseline.py" <<'PY'
import json, sys
out = sys.stdout
with open(sys.argv[1], "rb") as f:
    for line in f:
        out.write(json.dumps(json.loads(line), sort_keys=True))
        out.write("\n")
PY

best() { # best CPU seconds of 3 runs of "$@"
  local b=""
  for _ in 1 2 3; do
    local t
    t=$( { /usr/bin/time -f "%U %S" "$@" > /dev/null; } 2>&1 | tail -1 | awk '{print $1+$2}')
    if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t; fi
  done
  echo "$b"
}

lg_small=$(best "$bin" replay --config "$cfg" --json "$tmp/small.jsonl")
py_small=$(best python3 "$tmp/baseline.py" "$tmp/small.jsonl")
lg_big=$(best "$bin" replay --config "$cfg" --json "$tmp/big.jsonl")
ssl_big=$(best openssl dgst -sha256 "$tmp/big.jsonl")

size_small=$(stat -c %s "$tmp/small.jsonl")
size_big=$(stat -c %s "$tmp/big.jsonl")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "stream 1: $events events, $((size_small / 1000000)) MB, ~100-byte results"
awk -v e="$events" -v l="$lg_small" -v p="$py_small" 'BEGIN{
  printf "  loopguard replay --json : %.2f s CPU, %.0f events/s\n", l, e/l;
  printf "  python json pass        : %.2f s CPU\n", p;
  printf "  loopguard is %.1fx faster than the Python pass (target: at least 5x)\n", p/l }'
echo "stream 2: $big events, $((size_big / 1000000)) MB, ~100 KB results"
awk -v s="$size_big" -v l="$lg_big" -v o="$ssl_big" 'BEGIN{
  printf "  loopguard replay --json : %.2f s CPU, %.0f MB/s\n", l, s/l/1e6;
  printf "  openssl dgst -sha256    : %.2f s CPU, %.0f MB/s\n", o, s/o/1e6;
  printf "  loopguard takes %.2fx the time of openssl (target: within 3x)\n", l/o }'
