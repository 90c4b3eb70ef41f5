"""The repository's Python example with LangChain (examples/python-langchain/agent.py) runs
and prints what it teaches: the 11th identical call warned, the 21st refused."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO, framework

framework("langchain.agents")  # installed by scripts/test-python.sh

WARNING_11 = (
    "WARNING: You have called read_file 10 times with identical arguments. "
    "If this is not making progress, stop retrying and report the task as failed."
)
BLOCK_21 = (
    "CRITICAL: Called read_file with identical arguments and identical outcomes 20 times. "
    "Session execution blocked to prevent runaway loops."
)


def test_langchain_example_warns_at_11_and_refuses_from_21() -> None:
    example = REPO / "examples" / "python-langchain" / "agent.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    expected = []
    for n in range(1, 26):
        if n == 11:
            expected.append(f"call 11: success: {'port: 8080' + chr(10) * 2 + WARNING_11!r}")
        elif n <= 20:
            expected.append(f"call {n}: success: 'port: 8080'")
        else:
            expected.append(f"call {n}: error: {BLOCK_21!r}")
    expected.append("read_file ran 20 times; the agent answered: I could not find the port.")
    assert lines == expected, out.stdout
