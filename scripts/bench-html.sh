#!/usr/bin/env bash
# What `--html` costs on a long session, against the same replay without it, in one run.
#
#   scripts/bench-html.sh [EVENTS]
#
# One session of EVENTS events (default 200 000; ~100-byte results, detectors on) is replayed
# three times with the text report only and three times with `--html` as well; the best CPU
# time (user+sys) of each is kept. Prints both, their ratio and the page's size.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-200000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo build --release -q -p loopguard -p loopguard-replay --example gen_events
bin=target/release/loopguard
target/release/examples/gen_events "$events" 100 1 > "$tmp/session.jsonl"
echo '{tools:{loopDetection:{enabled:true}}}' > "$tmp/cfg.json5"

best() { # best CPU seconds of 3 runs of "$@"
  local b=""
  for _ in 1 2 3; do
    local t
    t=$( { /usr/bin/time -f "%U %S" "$@" > /dev/null 2>/dev/null; } 2>&1 | tail -1 | awk '{print $1+$2}')
    if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t; fi
  done
  echo "$b"
}

text=$(best "$bin" replay --config "$tmp/cfg.json5" "$tmp/session.jsonl")
html=$(best "$bin" replay --config "$tmp/cfg.json5" --html "$tmp/page.html" "$tmp/session.jsonl")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "one session of $events events"
awk -v t="$text" -v h="$html" 'BEGIN{
  printf "  replay, text report      : %.2f s CPU\n", t;
  printf "  replay with --html       : %.2f s CPU (%.2fx)\n", h, h/t }'
echo "  page: $(( $(stat -c %s "$tmp/page.html") / 1024 )) KiB"
