#!/usr/bin/env bash
# The npm package's benchmark: a Guard's beforeCall + afterCall pair against a pure-JavaScript
# sorted-key JSON + SHA-256 pass over the same data (bindings/node/bench/bench.mjs), run with the
# package installed by scripts/test-node.sh (target/node-test). Timing is not a test.
#
#   scripts/bench-node.sh [--quick] [--against PACKAGE_DIR]
#
# --against times another build of the package (its directory, e.g. a node_modules/loopguard
# installed from an earlier tarball) in the same rounds, for a comparison under the same load.
set -euo pipefail
cd "$(dirname "$0")/.."
proj=target/node-test
if [ ! -d "$proj/node_modules/loopguard" ]; then
  echo "bench-node.sh: run scripts/test-node.sh first (it installs the package into $proj)" >&2
  exit 1
fi
cp bindings/node/bench/bench.mjs "$proj/bench.mjs"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --against)
      [ $# -ge 2 ] || { echo "bench-node.sh: --against needs a package directory" >&2; exit 2; }
      args+=(--against "$(cd "$2" && pwd)")
      shift 2
      ;;
    *) args+=("$1"); shift ;;
  esac
done
(cd "$proj" && node bench.mjs "${args[@]}")
