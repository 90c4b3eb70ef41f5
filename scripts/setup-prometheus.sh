#!/usr/bin/env bash
# Installs Prometheus and promtool (Debian's `prometheus` package ships both) for the tests of
# the ops assets in deploy/ (crates/loopguard/tests/deploy_assets.rs): `promtool check rules`,
# `promtool test rules`, and a Prometheus on a free loopback port that scrapes a running
# `loopguard serve` and evaluates the alert rules. No service is used: the package may start
# one where systemd runs; the tests start their own. Idempotent; needs root or sudo.
set -euo pipefail
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  promtool --version 2>&1 | head -1
  exit 0
fi
as_root=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then as_root=sudo; else
    echo "setup-prometheus.sh: prometheus or promtool is missing and this is not root (no sudo): install the prometheus package" >&2
    exit 1
  fi
fi
$as_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends prometheus >/dev/null
promtool --version 2>&1 | head -1
