#!/usr/bin/env bash
# Latency of one `loopguard hook claude-code` invocation (a process start per tool call),
# cold (new database) and warm (existing database, full session history), with the cost of
# spawning `true` and `loopguard --version` measured in the same run as baselines; then the
# same warm calls and a loop's first block with and without `loopguard.alerts` (a webhook on
# a local receiver), alternating.
#
#   scripts/bench-hook.sh [--runs N] [--alerts]     # --alerts: only the alerts rows
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p loopguard >&2
target_dir="${CARGO_TARGET_DIR:-target}"
cargo run --release -q -p loopguard-hook --example hook_latency -- \
  --bin "$target_dir/release/loopguard" "$@"
