#!/usr/bin/env bash
# Installs redis-server and redis-cli (Debian packages redis-server and redis-tools) for the
# `loopguard serve` tests, which start their own servers on free loopback ports (a single
# server, a three-node cluster made with `redis-cli --cluster create`, a TLS server); no
# service is started here. Idempotent; needs root or sudo.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
  redis-server --version
  exit 0
fi
as_root=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then as_root=sudo; else
    echo "setup-redis.sh: redis-server or redis-cli is missing and this is not root (no sudo): install the redis-server and redis-tools packages" >&2
    exit 1
  fi
fi
$as_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends redis-server redis-tools >/dev/null
# The package starts a system service on port 6379 where systemd runs; the tests do not use it.
redis-server --version
