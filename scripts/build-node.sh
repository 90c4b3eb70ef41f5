#!/usr/bin/env bash
# Builds the `loopguard` npm package (bindings/node): the native addon in release mode
# (napi-rs, `cargo build --release -p loopguard-node`), placed beside package.json as
# loopguard.<platform>.node, then `npm pack` to target/npm/loopguard-VERSION.tgz. That tarball
# installs with `npm install target/npm/loopguard-VERSION.tgz` in any project on the platform it
# was built on, with no compiler. This script builds linux-x64-gnu only (the platform CI runs);
# the other platforms are built on their own machines the same way (docs/typescript.md).
#
# Needs a Rust toolchain, node 20+ and npm. Prints the tarball's path last.
set -euo pipefail
cd "$(dirname "$0")/.."

pkg=bindings/node
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64-gnu ;;
  *)
    echo "build-node.sh: this script packs linux-x64-gnu; on $(uname -s)-$(uname -m) add the platform to $pkg/package.json's napi.targets and lib/native.cjs" >&2
    exit 1
    ;;
esac
if ldd --version 2>&1 | grep -qi musl; then
  echo "build-node.sh: musl libc: the package is linux-x64-gnu" >&2
  exit 1
fi

version=$(node -p "require('./$pkg/package.json').version")
crate_version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
if [ "$version" != "$crate_version" ]; then
  echo "build-node.sh: $pkg/package.json has version $version but the workspace is $crate_version" >&2
  exit 1
fi

start=$(date +%s)
# napi-rs's macros write the addon's type definitions while the crate compiles; when the crate is
# up to date (no file yet), it is compiled again so they are written.
typedefs=$PWD/target/napi-typedef
mkdir -p "$typedefs"
[ -s "$typedefs/loopguard-node" ] || touch "$pkg/src/lib.rs"
NAPI_TYPE_DEF_TMP_FOLDER=$typedefs cargo build --release -q -p loopguard-node
cp target/release/libloopguard_node.so "$pkg/loopguard.$platform.node"
node "$pkg/scripts/native-dts.mjs" "$typedefs/loopguard-node" "$pkg/native.d.ts"
echo "   addon built in $(( $(date +%s) - start )) s" >&2

mkdir -p target/npm
rm -f "target/npm/loopguard-$version.tgz"
(cd "$pkg" && npm pack --silent --pack-destination ../../target/npm >/dev/null)
tarball="target/npm/loopguard-$version.tgz"
test -f "$tarball" || { echo "build-node.sh: npm pack did not write $tarball" >&2; exit 1; }
echo "$tarball"
