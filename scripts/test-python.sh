#!/usr/bin/env bash
# Builds the `loopguard` Python package (bindings/python, PyO3 + maturin), installs it into a
# fresh virtual environment under target/ together with pytest, hypothesis and the frameworks
# the integrations support, and runs its pytest suite. Called by .ci/run; runs locally too.
#
#   scripts/test-python.sh            # everything
#   scripts/test-python.sh -k remote  # extra arguments go to pytest
#
# Needs python3 (3.9+; CI has 3.11) with venv and pip, a Rust toolchain, and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
venv="target/python-venv"

echo "== Python: $("$PYTHON" --version 2>&1)"
rm -rf "$venv"
"$PYTHON" -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip

echo "== pip install: pytest, hypothesis, mypy, langchain v1, openai-agents, google-adk"
start=$(date +%s)
"$py" -m pip install -q "pytest>=8" "hypothesis>=6" "mypy>=1.18" \
  "langchain>=1,<2" "langchain-core>=1,<2" "openai-agents>=0.4" "google-adk>=1"
echo "   installed in $(( $(date +%s) - start )) s"

echo "== pip install ./bindings/python (what the README says; maturin builds the extension)"
start=$(date +%s)
"$py" -m pip install -q ./bindings/python
echo "   built and installed in $(( $(date +%s) - start )) s"
"$py" -c 'import loopguard, sys; print("   loopguard from", loopguard.__file__)'

echo "== types: the .pyi stubs match the extension (mypy stubtest); the package is mypy --strict clean"
(cd bindings/python && "../../$py" -m mypy.stubtest loopguard._loopguard && "../../$py" -m mypy --strict python/loopguard)

# The remote client is tested against a real `loopguard serve` (the workspace's debug binary;
# the README's cargo test has built it already) as well as the stand-in server.
cargo build -q -p loopguard
export LOOPGUARD_SERVE_BIN="$PWD/target/debug/loopguard"
"$LOOPGUARD_SERVE_BIN" serve --help >/dev/null
echo "== the remote tests run against a real loopguard serve too"

export LOOPGUARD_REQUIRE_FRAMEWORKS=1
echo "== pytest bindings/python/tests"
set +e
(cd bindings/python && "../../$py" -m pytest -p no:cacheprovider "$@")
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  exit "$status"
fi

echo "== the Python benchmark runs (--quick; timing is not a test)"
"$py" bindings/python/bench/bench_guard.py --quick
