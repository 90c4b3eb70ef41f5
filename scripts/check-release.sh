#!/usr/bin/env bash
# Release readiness, run by .ci/run:
#   1. every crate packages and its packaged sources build (`cargo package --workspace`);
#   2. the declared MSRV (workspace `rust-version`): rustup cannot fetch another toolchain on the
#      project's machines, so this is a cargo-msrv-style check: no dependency in the lock file
#      declares a newer `rust-version`, and clippy's `incompatible_msrv` lint (on by default, run
#      with -D warnings by .ci/run) rejects any std API stabilised after it. With a `+1.88`
#      toolchain installed (`rustup toolchain list`), the workspace is also built with it;
#   3. loopguard-guard builds and lints without its optional features (no SQLite, no Redis).
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -1)
echo "== MSRV $msrv: dependencies' declared rust-version"
cargo metadata --format-version 1 --locked | python3 -c '
import json, sys
msrv = tuple(int(x) for x in sys.argv[1].split("."))
def parse(v):
    parts = [int(x) for x in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))
m = json.load(sys.stdin)
bad = ["%s %s needs %s" % (p["name"], p["version"], p["rust_version"]) for p in m["packages"]
       if p.get("rust_version") and parse(p["rust_version"]) > parse(sys.argv[1])]
if bad:
    print("dependencies newer than the MSRV:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("%d packages, none needs more than %s" % (len(m["packages"]), sys.argv[1]))
' "$msrv"
if rustup toolchain list 2>/dev/null | grep -q "^$msrv"; then
  echo "== cargo +$msrv check --workspace"
  cargo "+$msrv" check --workspace --locked
else
  echo "(no $msrv toolchain here: the MSRV is checked by the dependency scan above and clippy's incompatible_msrv lint)"
fi

echo "== loopguard-guard without optional features"
cargo clippy -p loopguard-guard --no-default-features --locked -- -D warnings

echo "== cargo package --workspace (crates.io crates)"
# The language bindings are published to PyPI and npm, not crates.io (`publish = false`), and
# the examples (examples/rust-embedding) are not published at all.
# Packaged crates are verified as registry crates, and cargo treats a registry crate as
# immutable: it never unpacks one again over an earlier unpacking of the same name and version
# (under $CARGO_HOME/registry/src/-HASH/, named after the temporary registry's path) and never
# rebuilds it for a changed source. A second run on the same machine would verify our crates
# against the sources and the builds of the first. Start from nothing: remove those unpackings
# of our own crates (and only those), the packaging directory, and our crates' fingerprints
# (cargo then rebuilds them, as the verification would anyway).
# cargo's own answer for the target directory (CARGO_TARGET_DIR, build.target-dir, ...).
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
rm -rf "$target_dir/package" "$target_dir"/debug/.fingerprint/loopguard*
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/loopguard*-[0-9]* \
       "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/-*/loopguard*-[0-9]*
cargo package --workspace --exclude loopguard-python --exclude loopguard-node --exclude example-rust-embedding --locked --allow-dirty
