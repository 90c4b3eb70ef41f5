#!/usr/bin/env bash
# A curl session against `loopguard serve`, the guard as an HTTP service (docs/serve.md).
# Starts the server on a free 127.0.0.1 port, reports a looping agent's calls and outcomes
# with POST /v1/events, shows the warning at the 11th identical call and the block at the
# 21st, reads the session back with GET /v1/sessions/{id}, and stops the server.
#
# Run it: examples/serve-curl/session.sh
#   (LOOPGUARD=path/to/loopguard to use another binary than the `loopguard` on PATH,
#    e.g. LOOPGUARD=target/debug/loopguard after `cargo build -p loopguard`)
set -euo pipefail
loopguard="${LOOPGUARD:-loopguard}"
tmp=$(mktemp -d)

# Port 0: the system picks a free port; the server says which on stderr.
"$loopguard" serve --listen 127.0.0.1:0 2>"$tmp/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 200); do
  url=$(sed -n 's|.*listening on \(http://[^ ]*\).*|\1|p' "$tmp/serve.log")
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$tmp/serve.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "loopguard serve did not start" >&2; exit 1; }
echo "loopguard serve listening on $url"

event() { curl -sS --fail-with-body "$url/v1/events" -H 'content-type: application/json' -d "$1"; }
args='{"path":"/srv/app/config.yaml"}'

for n in $(seq 1 21); do
  # Before the tool runs: the call. The answer is a decision record.
  answer=$(event "{\"type\":\"call\",\"session\":\"demo\",\"callId\":\"call-$n\",\"tool\":\"read\",\"args\":$args}")
  case "$answer" in
    *'"decision":"block"'*) echo "call $n: $answer"; break ;;   # do not run the tool
    *'"emitted":true'*) echo "call $n: $answer" ;;              # run it; show the message
    *) echo "call $n: $(sed 's/.*"decision":"\([a-z-]*\)".*/\1/' <<<"$answer")" ;;
  esac
  # After it ran: the outcome (here the same result every time).
  event "{\"type\":\"outcome\",\"session\":\"demo\",\"callId\":\"call-$n\",\"tool\":\"read\",\"args\":$args,\"result\":\"port: 8080\"}" >/dev/null
done

# The session's counters (its `recent` decisions are cut off here).
echo "GET /v1/sessions/demo:"
curl -sS --fail-with-body "$url/v1/sessions/demo" | sed 's/,"recent":.*/, ...}/'
echo
