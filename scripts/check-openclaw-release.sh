#!/usr/bin/env bash
# Notices a new OpenClaw release the day it ships: asks npm for the newest `openclaw`,
# installs it under target/openclaw-next (with the Node 24 of scripts/setup-openclaw.sh),
# compares the chunks the `openclaw-2026.9.6` oracle runs with the pinned release's
# (tests/fixtures/openclaw-2026.9.6/CHUNKS.sha256), shows the detector chunk's diff, and
# reruns the oracle on every fixture's events with the new release, listing the cases whose
# decisions changed.
#
#   scripts/check-openclaw-release.sh            # the newest release (npm's `latest` tag)
#   scripts/check-openclaw-release.sh 2026.10.1  # a given version
#
# Exit status: 0 when the release decides every case as 2026.9.6 does, 1 when decisions
# changed (a new era: see docs/decisions.md, "Two eras of OpenClaw"), 2 when something could
# not be run. Not run by CI or scripts/test.sh: it needs the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
fixtures=$repo/tests/fixtures/openclaw-2026.9.6
{ read -r node24; read -r pinned; } < <(bash scripts/setup-openclaw.sh) || exit 2
export PATH="$node24:$PATH"

version=${1:-$(npm view openclaw version --cache "$repo/target/npm-cache" 2>/dev/null)} || true
if [ -z "$version" ]; then
  echo "check-openclaw-release.sh: npm did not answer the newest openclaw version" >&2
  exit 2
fi
echo "== openclaw $version (pinned: 2026.9.6)"

next=$repo/target/openclaw-next
want="{\"private\":true,\"dependencies\":{\"openclaw\":\"$version\"}}"
if [ ! -f "$next/.installed" ] || [ "$(cat "$next/.installed")" != "$want" ]; then
  rm -rf "$next"
  mkdir -p "$next"
  echo "$want" >"$next/package.json"
  (cd "$next" && npm install --no-audit --no-fund --loglevel=error --cache "$repo/target/npm-cache" >&2) || {
    echo "check-openclaw-release.sh: npm install openclaw@$version failed" >&2
    exit 2
  }
  echo "$want" >"$next/.installed"
fi
pkg=$next/node_modules/openclaw

echo "== chunks the oracle runs"
while read -r sum file; do
  prefix=$(basename "$file" | sed -E 's/-[A-Za-z0-9_-]{8}\.mjs$//')
  found=$(cd "$pkg/dist" && ls | grep -E "^${prefix//./\\.}-[A-Za-z0-9_-]{8}\.mjs$" || true)
  if [ -z "$found" ]; then
    echo "   $prefix: gone"
    continue
  fi
  same=""
  for f in $found; do
    if [ "$(sha256sum "$pkg/dist/$f" | cut -d' ' -f1)" = "$sum" ]; then same=$f; fi
  done
  if [ -n "$same" ]; then
    echo "   $prefix: unchanged ($same)"
  else
    echo "   $prefix: changed ($(basename "$file") -> $(echo $found))"
  fi
done <"$fixtures/CHUNKS.sha256"

old_chunk=$(ls "$pinned"/dist/tool-loop-detection-????????.mjs)
new_chunk=$(ls "$pkg"/dist/tool-loop-detection-????????.mjs 2>/dev/null | head -n 1 || true)
if [ -n "$new_chunk" ]; then
  echo "== diff of the detector chunk ($(basename "$old_chunk") -> $(basename "$new_chunk"))"
  diff -u "$old_chunk" "$new_chunk" | sed -n '3,$p' | head -n 400 || true
fi

echo "== the oracle with openclaw $version on every case"
work=$repo/target/tmp/openclaw-next-cases
rm -rf "$work"
mkdir -p "$work"
cp "$fixtures"/*.config.json "$fixtures"/*.events.jsonl "$work/"
if ! "$node24/node" "$fixtures/oracle.mjs" "$pkg" "$work" >/dev/null 2>"$work/oracle.log"; then
  echo "check-openclaw-release.sh: the oracle could not run openclaw $version (its code moved); see $work/oracle.log" >&2
  tail -n 5 "$work/oracle.log" >&2
  exit 1
fi
changed=0
total=0
for f in "$fixtures"/*.expected.jsonl; do
  name=$(basename "$f" .expected.jsonl)
  total=$((total + 1))
  if ! cmp -s "$f" "$work/$name.expected.jsonl"; then
    changed=$((changed + 1))
    first=$(diff "$f" "$work/$name.expected.jsonl" | grep -m1 '^>' | cut -c3-200)
    echo "   $name: decisions changed; first new record: $first"
  fi
done
echo "== $changed of $total cases decided differently by openclaw $version"
[ "$changed" -eq 0 ]
