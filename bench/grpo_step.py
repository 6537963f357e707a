"""A GRPO step end to end, per task: real ``bootcamp train grpo`` runs, one after another.

Each run trains ``--steps`` steps of one group of 8 episodes on fresh instances of one task
(``--difficulty``, default easy): ≤ 4 turns of up to ``--tokens`` tokens (default 160),
temperature 1, ``--dtype`` for sampling and training (default auto: bfloat16 where this
machine multiplies it fast, else float32), the training pass forced on every group with
``--train-flat-groups``. The script reads TRL's ``step_time`` and the rollout function's
seconds from the log: the step, its rollouts and its training pass (the difference), with
each group's mean reward (a group whose episodes all score alike is skipped in real
training), the run's ``prompt_sharing`` counts and its peak resident memory. ``--runs``
lists ``task[:draft_tokens[:difficulty[:modes]]]`` entries, so a setting can be compared on
the same task in the same script and each task can play its own difficulty; ``modes`` joins
with ``+``: ``unmerged`` turns ``grpo.MERGE_AGREEING_ROWS`` off (every episode of a group
decodes itself), ``uncached`` keeps none of the
reference model's prompts (``--reference-cache-gb 0``), ``readprompt`` turns
``grpo.PROMPT_PASS_IN_ROLLOUTS`` off (the rollouts read the prompt themselves instead of
decoding on from the training pass's prompt forward), ``pagesuncounted`` leaves mimalloc's
kept pages out of the activation budget (as before session 49). ``--beta`` adds the KL
term to the reference model, as the experiment's GRPO stage does (0.04): its reference pass
is part of the step. ``--instances`` N cycles the steps over N instances, as a curriculum's
recur (v39's: 13 over 48 steps).

    python bench/grpo_step.py --model experiments/out/v18/models/sft/final \\
        --runs robot_reach:0,robot_reach:3,harmony,thermal,escape_room
    python bench/grpo_step.py --model runs/v39/models/sft/final --beta 0.04 \\
        --runs harmony-v5:3:easy,thermal-v6:3:medium,robot_reach-v7:3:medium --tokens 192

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

STEP = re.compile(r"'step_time': '([0-9.]+)'")
REWARD = re.compile(r"\[grpo\] step \d+: \d+ episodes, mean reward ([0-9.]+)")
ROLLOUTS = re.compile(
    r"\[grpo\] step \d+: .*rollouts ([0-9.]+) s(?:, drafted tokens kept (\d+)/(\d+))?"
)
LENGTH = re.compile(r"'completions/mean_length': '([0-9.]+)'")


# The CLI with module switches turned off (grpo.MERGE_AGREEING_ROWS: every episode of a
# group decodes itself; grpo.PROMPT_PASS_IN_ROLLOUTS: the rollouts read the prompt themselves).
SWITCHED_OFF = (
    "import sys; from agentharness.train import grpo; {switches}"
    "from agentharness.cli.main import main; sys.argv[0] = 'bootcamp'; main()"
)


MODES = ("unmerged", "uncached", "readprompt", "pagesuncounted")


def run(
    task: str,
    drafts: int,
    difficulty: str,
    args: argparse.Namespace,
    out: Path,
    modes: frozenset[str] = frozenset(),
) -> tuple[list[dict[str, float]], float | None]:
    """The run's steps, and its peak resident memory in GB (None where not recorded)."""
    switches = "".join(
        f"grpo.{name} = False; "
        for mode, name in (
            ("unmerged", "MERGE_AGREEING_ROWS"),
            ("readprompt", "PROMPT_PASS_IN_ROLLOUTS"),
        )
        if mode in modes
    )
    if "pagesuncounted" in modes:
        switches += "grpo.keeps_freed_pages = lambda: False; "
    entry = (
        ["-c", SWITCHED_OFF.format(switches=switches)] if switches else ["-m", "agentharness.cli"]
    )
    instances = args.instances or args.steps
    command = [
        sys.executable, *entry, "train", "grpo",
        "--tasks", task, "--difficulty", difficulty, "--beta", str(args.beta), "--n-instances", str(instances),
        "--first-seed", "100001", "--max-steps", str(args.steps), "--num-generations", "8",
        "--max-turns", "4", "--max-new-tokens", str(args.tokens), "--max-completion-length", "4096",
        "--rollout-dtype", args.dtype, "--train-dtype", args.dtype, "--train-flat-groups",
        "--draft-tokens", str(drafts),
        "--out", str(out), "--no-progress",
    ]  # fmt: skip
    if "uncached" in modes:
        command += ["--reference-cache-gb", "0"]
    if args.model:
        command += ["--model", args.model]
    log = subprocess.run(command, capture_output=True, text=True, check=False)
    text = log.stdout + log.stderr
    if log.returncode != 0:
        raise SystemExit(f"{task}: train grpo failed\n{text[-3000:]}")
    steps = [float(x) for x in STEP.findall(text)]
    rollouts = [float(m.group(1)) for m in ROLLOUTS.finditer(text)]
    lengths = [float(x) for x in LENGTH.findall(text)]
    rewards = [float(x) for x in REWARD.findall(text)]
    summary = json.loads((out / "train_summary.json").read_text())
    sharing = summary.get("prompt_sharing", {})
    print(
        f"{task} drafts {drafts}: prompt_sharing {json.dumps(sharing)}; the reference model's "
        f"prompt tokens {json.dumps(summary.get('reference_prompt_tokens'))}; group mean rewards "
        f"{rewards} (1.0 or 0.0: every episode scored the same)",
        flush=True,
    )
    if len(steps) != args.steps or len(rollouts) != args.steps:
        raise SystemExit(f"{task}: expected {args.steps} steps in the log\n{text[-3000:]}")
    return [
        {"step": s, "rollouts": r, "pass": s - r, "model_tokens": n, "reward": w}
        for s, r, n, w in zip(steps, rollouts, lengths, rewards, strict=True)
    ], summary.get("peak_resident_gb")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M")
    parser.add_argument("--runs", default="robot_reach:0,robot_reach:3")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--difficulty", default="easy", help="of runs that name none")
    parser.add_argument("--beta", type=float, default=0.0, help="KL coefficient (stage: 0.04)")
    parser.add_argument("--tokens", type=int, default=160, help="max new tokens a turn")
    parser.add_argument("--dtype", default="auto", help="auto, float32 or bfloat16")
    parser.add_argument(
        "--instances",
        type=int,
        default=0,
        help="distinct instances the steps cycle over, as a curriculum's recur (default: one a step)",
    )
    args = parser.parse_args()
    table = []
    for entry in args.runs.split(","):
        task, _, rest = entry.partition(":")
        drafts, _, rest = rest.partition(":")
        difficulty, _, mode = rest.partition(":")
        modes = frozenset(mode.split("+")) - {""}
        if not modes <= set(MODES):
            raise SystemExit(f"{entry}: the fourth field joins {' and '.join(MODES)} with '+'")
        k = int(drafts) if drafts else 3
        difficulty = difficulty or args.difficulty
        with tempfile.TemporaryDirectory() as tmp:
            steps, resident = run(task, k, difficulty, args, Path(tmp) / "grpo", modes)
        if mode:
            task = f"{task} {mode}"
        for i, s in enumerate(steps):
            print(
                f"{task} drafts {k} step {i}: step {s['step']:.1f} s = rollouts "
                f"{s['rollouts']:.1f} s + pass {s['pass']:.1f} s ({s['model_tokens']:.0f} "
                f"model tokens a row, group mean reward {s['reward']:.3f})",
                flush=True,
            )
        table.append((f"{task} ({difficulty})", k, steps, resident))
    print(
        f"\nbeta {args.beta}, <= 4 turns x {args.tokens} tokens, dtype {args.dtype}\n"
        "\n| task | draft tokens | model tokens a row | rollouts s | pass s | step s (each) "
        "| peak resident GB |"
        "\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for task, k, steps, resident in table:
        each = ", ".join(f"{s['step']:.1f}" for s in steps)
        print(
            f"| {task} | {k} | {statistics.median(s['model_tokens'] for s in steps):.0f} | "
            f"{statistics.median(s['rollouts'] for s in steps):.1f} | "
            f"{statistics.median(s['pass'] for s in steps):.1f} | {each} | "
            f"{'-' if resident is None else resident} |"
        )


if __name__ == "__main__":
    main()
