#!/usr/bin/env bash
# What `--html` costs on a long session, against the same replay without it, in one run.
#
#   scripts/bench-html.sh [EVENTS]
#
# One session of EVENTS events (default 200 000; ~100-byte results, detectors on) is replayed
# three times with the text report only and three times with `--html` as well; the best CPU
# time (user+sys) of each is kept. Prints both, their ratio and the page's size. With
# LOOPGUARD_BASELINE=/path/to/an/older/loopguard, that binary is measured the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-200000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo build --release -q -p loopguard
cargo build --release -q -p loopguard-replay --example gen_events
bin=target/release/loopguard
target/release/examples/gen_events "$events" 100 1 > "$tmp/session.jsonl"
echo '{tools:{loopDetection:{enabled:true}}}' > "$tmp/cfg.json5"

best() { # best CPU seconds of 3 runs of "$@"
  local b=""
  for _ in 1 2 3; do
    local t
    /usr/bin/time -o "$tmp/time" -f "%U %S" "$@" > /dev/null 2>/dev/null
    t=$(awk '{print $1+$2}' "$tmp/time")
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
if [ -n "${LOOPGUARD_BASELINE:-}" ]; then
  bt=$(best "$LOOPGUARD_BASELINE" replay --config "$tmp/cfg.json5" "$tmp/session.jsonl")
  bh=$(best "$LOOPGUARD_BASELINE" replay --config "$tmp/cfg.json5" --html "$tmp/base.html" "$tmp/session.jsonl")
  awk -v t="$bt" -v h="$bh" 'BEGIN{
    printf "  baseline binary, text    : %.2f s CPU\n", t;
    printf "  baseline binary, --html  : %.2f s CPU (%.2fx)\n", h, h/t }'
  echo "  baseline page: $(( $(stat -c %s "$tmp/base.html") / 1024 )) KiB"
fi
