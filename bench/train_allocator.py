"""SFT under each allocator: glibc's defaults, glibc keeping freed memory, mimalloc.

Each run is a whole ``bootcamp train sft`` process, alternating the settings round by round
so load drifts hit all of them: ``system`` (``AGENTHARNESS_MALLOC=system``: glibc's
defaults, every block above 32 MB mapped on allocation and unmapped on free), ``keep``
(``AGENTHARNESS_MALLOC=glibc``: freed memory stays in glibc's heap and is reused,
``keep_freed_memory``), ``mimalloc-keep`` (the process started with mimalloc preloaded and
its freed pages kept, as ``train sft`` restarts itself since session 44) and
``mimalloc-purge`` (mimalloc returning freed pages after 10 ms, its own default).
``--modes`` picks them (default ``system keep``, the comparison recorded first). The data is
four expert conversations (robot_reach, harmony, thermal, escape_room at easy; 1,700-3,300
tokens), or ``--data``'s SFT file (an experiment's ``sft.jsonl``). Reports TRL's
``train_runtime`` (the steps, not the model load), the process's kernel CPU time, minor page
faults and peak resident size, and checks every setting gives the same losses. ``--grpo``
also times ``bench/train_pass_profile.py``'s bfloat16 pass on a real robot_reach group under
each setting.

    python bench/train_allocator.py --steps 8 --rounds 2 [--grpo]
    python bench/train_allocator.py --modes keep mimalloc-keep --data runs/v43/sft.jsonl --steps 32 --rounds 1

Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from agentharness.train.allocator import mimalloc_library

BOOTCAMP = str(Path(sys.executable).with_name("bootcamp"))
# Each task's current version (the recorded figures used robot_reach-v6, harmony-v3,
# thermal-v3 and escape_room-v1; later versions only shortened the conversations).
EXPERTS = [
    ("robot_reach", 100001),
    ("harmony", 1000),
    ("thermal", 1000),
    ("escape_room", 1000),
]
# Each mode's environment; the "mimalloc-" ones also preload mimalloc.
MODES = {
    "system": {"AGENTHARNESS_MALLOC": "system"},
    "keep": {"AGENTHARNESS_MALLOC": "glibc"},
    # freed pages kept (the SFT default since session 44)
    "mimalloc-keep": {"AGENTHARNESS_MALLOC": "mimalloc", "MIMALLOC_PURGE_DELAY": "-1"},
    # mimalloc's own default: freed pages go back to the system after 10 ms
    "mimalloc-purge": {"AGENTHARNESS_MALLOC": "mimalloc", "MIMALLOC_PURGE_DELAY": "10"},
}


def run(cmd: list[str], mode: str) -> tuple[str, Any]:
    """Run ``cmd`` under an allocator mode: its output and its own resource usage."""
    env = {**os.environ, **MODES[mode]}
    if mode.startswith("mimalloc"):
        library = mimalloc_library()
        if library is None:
            raise SystemExit("no mimalloc: install the 'train' extra (cmeel-mimalloc)")
        env["LD_PRELOAD"] = f"{library} {env.get('LD_PRELOAD', '')}".strip()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-2000:]}")
    return out, usage


def sft_data(directory: Path) -> Path:
    data = directory / "sft.jsonl"
    rows = []
    for task, seed in EXPERTS:
        runs = directory / f"expert_{task}"
        subprocess.run(
            [BOOTCAMP, "eval", "--agent", "expert", "--tasks", task, "-n", "1", "--difficulty", "easy",
             "--seed", str(seed), "--out", str(runs), "--quiet"],
            check=True, capture_output=True,
        )  # fmt: skip
        export = directory / f"{task}.jsonl"
        subprocess.run(
            [BOOTCAMP, "export", "sft", str(runs), "-o", str(export), "--tool-format", "text"],
            check=True, capture_output=True,
        )  # fmt: skip
        rows += export.read_text().splitlines()
    data.write_text("\n".join(rows) + "\n")
    return data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--grpo", action="store_true", help="also time the GRPO training pass")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=["system", "keep"])
    parser.add_argument("--data", type=Path, help="an SFT file (default: 4 expert conversations)")
    args = parser.parse_args()
    modes: list[str] = args.modes
    results: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    losses: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data.resolve() if args.data else sft_data(Path(tmp))
        for r in range(args.rounds):
            for mode in modes:
                out_dir = Path(tmp) / f"sft_{mode}_{r}"
                out, usage = run(
                    [BOOTCAMP, "train", "sft", "--data", str(data), "--out", str(out_dir),
                     "--max-steps", str(args.steps), "--train-dtype", "bfloat16",
                     "--max-length", "4096", "--no-progress"],
                    mode,
                )  # fmt: skip
                runtime = float(re.findall(r"'train_runtime': '([\d.]+)'", out)[-1])
                losses.setdefault(
                    mode, json.loads((out_dir / "train_summary.json").read_text())["losses"]
                )
                results[mode].append(
                    {
                        "runtime": runtime,
                        "system_cpu": usage.ru_stime,
                        "faults": usage.ru_minflt,
                        "peak_gb": usage.ru_maxrss / 2**20,
                    }
                )
                print(f"round {r} sft {mode:>6}: {runtime:6.1f} s, kernel CPU {usage.ru_stime:5.1f} s, "
                      f"{usage.ru_minflt:,} minor faults, peak RSS {usage.ru_maxrss / 2**20:.1f} GB",
                      flush=True)  # fmt: skip
        same = all(losses[m] == losses[modes[0]] for m in modes)
        print(
            f"\n`train sft`, {args.steps} steps, {args.rounds} rounds (medians); losses identical: {same}"
        )
        base = statistics.median(x["runtime"] for x in results[modes[0]])
        print(
            f"| malloc | train_runtime s | vs {modes[0]} | kernel CPU s | minor page faults | peak RSS GB |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for mode, rows in results.items():
            med = {k: statistics.median(x[k] for x in rows) for k in rows[0]}
            print(f"| {mode} | {med['runtime']:.1f} | {base / med['runtime']:.2f}x | "
                  f"{med['system_cpu']:.1f} | {med['faults']:,.0f} | {med['peak_gb']:.1f} |")  # fmt: skip
        if args.grpo:
            profile = str(Path(__file__).with_name("train_pass_profile.py"))
            for mode in modes:
                out, usage = run(
                    [sys.executable, profile, "--task", "robot_reach", "--seed", "100001",
                     "--threads", "2", "--rounds", "2", "--variants", "bf16"],
                    mode,
                )  # fmt: skip
                row = [line for line in out.splitlines() if line.startswith("| bf16 |")][-1]
                print(f"GRPO pass, {mode}: {row} (peak RSS {usage.ru_maxrss / 2**20:.1f} GB)")


if __name__ == "__main__":
    main()
