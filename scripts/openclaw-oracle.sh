#!/usr/bin/env bash
# Regenerates the fixtures of the `openclaw-2026.9.6` profile (tests/fixtures/openclaw-2026.9.6)
# from the shipped code: installs openclaw@2026.9.6 (scripts/setup-openclaw.sh), checks that the
# chunks the oracle runs are the ones recorded in CHUNKS.sha256, writes each case's events and
# config (cases.mjs), then each case's expected decisions (oracle.mjs) with Node 24.
#
#   scripts/openclaw-oracle.sh            # every case
#   scripts/openclaw-oracle.sh NAME...    # only these cases (their inputs are rewritten too)
#
# Not run by the test suite: the expected files are committed, and the parity test
# (crates/loopguard-core/tests/openclaw_2026_9_6.rs) compares the engine with them.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=$PWD/tests/fixtures/openclaw-2026.9.6
{ read -r node24; read -r pkg; } < <(bash scripts/setup-openclaw.sh)
(cd "$pkg" && sha256sum --quiet -c "$fixtures/CHUNKS.sha256") || {
  echo "openclaw-oracle.sh: the installed openclaw's chunks differ from $fixtures/CHUNKS.sha256" >&2
  exit 1
}
"$node24/node" "$fixtures/cases.mjs"
"$node24/node" "$fixtures/oracle.mjs" "$pkg" "$fixtures" "$@" 2>/dev/null
