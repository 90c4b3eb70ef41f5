"""A raw JSON-RPC client over stdio, for what the SDK's ClientSession hides: the exact bytes
of each answer, the protocol revision offered, and the server process's exit status.

    python raw.py SCENARIO VERSION -- COMMAND ARGS...

Prints one JSON document.
"""

import json
import subprocess
import sys


class Raw:
    def __init__(self, command):
        self.p = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def send(self, message):
        self.p.stdin.write(json.dumps(message).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            line = self.p.stdout.readline()
            if not line:
                return None
            reply = json.loads(line)
            if reply.get("id") == self.next_id and "method" not in reply:
                return line.decode()

    def handshake(self, version):
        init = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    def close(self):
        self.p.stdin.close()
        return self.p.wait(timeout=20)


def listing(version, command):
    c = Raw(command)
    out = {"initialize": c.handshake(version)}
    for method in ["tools/list", "resources/list", "prompts/list"]:
        out[method] = c.request(method, {})
    out["resources/read"] = c.request("resources/read", {"uri": "data://greeting"})
    out["prompts/get"] = c.request("prompts/get", {"name": "review", "arguments": {"code": "x"}})
    out["exit"] = c.close()
    return out


def loop(version, command):
    c = Raw(command)
    negotiated = json.loads(c.handshake(version))["result"]["protocolVersion"]
    calls = []
    for _ in range(21):
        reply = json.loads(c.request("tools/call", {"name": "same", "arguments": {"path": "/v"}}))
        result = reply["result"]
        calls.append({"isError": result.get("isError", False), "texts": [x["text"] for x in result["content"]]})
    return {"negotiated": negotiated, "calls": calls, "exit": c.close()}


def crash(version, command):
    c = Raw(command)
    c.handshake(version)
    reply = c.request("tools/call", {"name": "crash", "arguments": {}})
    return {"reply": json.loads(reply) if reply else None, "exit": c.p.wait(timeout=20)}


if __name__ == "__main__":
    scenario, version = sys.argv[1], sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1 :]
    result = {"listing": listing, "loop": loop, "crash": crash}[scenario](version, command)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
