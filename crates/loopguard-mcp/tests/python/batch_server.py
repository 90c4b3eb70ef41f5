"""A minimal MCP stdio server of the 2025-03-26 revision that answers JSON-RPC batches, for the
proxy's batch test (the SDK servers of later revisions refuse batches). Plain Python, no SDK.

Usage: batch_server.py RECEIVED_LOG
Every message it receives is appended to RECEIVED_LOG, one line each, so the test can see what
reached the server. Tools: `fine` answers "ok"; any other name is an unknown tool (a JSON-RPC
error, as the SDKs answer it).
"""

import json
import sys

log = open(sys.argv[1], "a", buffering=1)


def answer(msg):
    if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
        return None  # a notification or a response: no answer
    method, rid = msg["method"], msg["id"]
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
            "serverInfo": {"name": "batch-server", "version": "1"}}}
    if method == "tools/call":
        name = msg.get("params", {}).get("name")
        if name == "fine":
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}}
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"Unknown tool: {name}"}}
    return {"jsonrpc": "2.0", "id": rid, "result": {}}


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    log.write(line + "\n")
    msg = json.loads(line)
    if isinstance(msg, list):
        out = [a for a in (answer(m) for m in msg) if a is not None]
        if out:
            print(json.dumps(out), flush=True)
    else:
        a = answer(msg)
        if a is not None:
            print(json.dumps(a), flush=True)
