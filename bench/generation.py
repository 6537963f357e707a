"""CPU generation speed (issue 12): GRPO groups and ``--agent local`` evaluations, new path vs plain ``generate``.

GRPO side: a group of G episodes of one instance, up to T turns of up to N sampled tokens
(temperature 1), played three ways in the same process on the same instance, rounds
alternating the sides so load drifts hit all alike:

- ``plain``: the old ``local`` agent path, one episode at a time; every turn renders and
  tokenises the whole conversation and calls ``model.generate`` (float32);
- ``fp32``: ``EpisodeRoller`` (the GRPO rollout): the group decoded together by
  :class:`agentharness.train.decode.Decoder`, prompt read once, KV caches kept across turns;
- ``bf16``: the same with a bfloat16 copy of the model; the log-probabilities it records
  are compared with a float32 forward pass over the same tokens (mean and max |difference|);
- ``merged`` and ``unmerged``: ``fp32`` without drafts, episodes that have written the same
  tokens decoded as one row (``grpo.MERGE_AGREEING_ROWS``, as ``fp32`` and ``bf16`` do) or
  each decoding itself; ``merged+drafts`` and ``unmerged+drafts`` the same with 3 drafts
  (``fp32`` is ``merged+drafts``); the merged sides' log-probabilities are compared with a
  float32 forward pass too.

Eval side (``--eval N``): N instances (``--eval-k`` samples each, at
``--eval-temperature``, greedy by default) played by the ``local`` agent through the run
loop at ``--concurrency C``: the plain path, the batched engine without drafts and with
them, and the engine without drafts that reads every prompt itself (``uncopied``: no
positions taken from another episode's cache) (``--eval-sides``, ``--eval-rounds``
alternating); greedy transcripts should be equal (the table says whether they are).

Reported per side: wall seconds (per group / per eval), sampled tokens per second, medians
over rounds and the ratio to ``plain``.

    python bench/generation.py [--model DIR] [--task thermal] [--group 8] [--turns 4]
        [--tokens 128] [--rounds 3] [--sides plain,fp32,bf16] [--plain-episodes K]
        [--eval 8] [--eval-k 1] [--eval-temperature 0] [--eval-sides plain,batched,drafts]
        [--eval-rounds 1] [--difficulty easy] [--concurrency 8] [--threads N]

The plain path plays episodes one after another, so ``--plain-episodes K`` plays K of the
group and scales its time by G / K (its tokens per second are measured, not scaled).

``--model`` defaults to the bundled SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentharness import get_task
from agentharness.agents import local
from agentharness.agents.local import LocalAgent
from agentharness.core.instance import Instance
from agentharness.core.registry import episode_for
from agentharness.train import grpo
from agentharness.train.grpo import EpisodeRoller, GRPOOptions
from agentharness.train.model import load_trainable

MERGE_DEFAULT = grpo.MERGE_AGREEING_ROWS


def plain_group(agent: LocalAgent, instance: Instance, group: int, turns: int) -> int:
    """The group one episode at a time by the plain path; the sampled token count."""
    budgets = get_task(instance.task).interaction.budgets
    budgets = budgets.override(max_turns=min(budgets.max_turns, turns))
    sampled = 0
    for _ in range(group):
        episode = episode_for(instance, budgets)
        while not episode.done:
            turn = agent.generate(list(episode.messages), episode.tools)
            sampled += turn.usage.completion_tokens if turn.usage else 0
            episode.step(turn.message)
    return sampled


def logprob_gap(net: Any, rollouts: list[Any], episodes: int = 2) -> tuple[float, float, int]:
    """Mean and max |recorded - float32 forward| log-probability of sampled tokens."""
    import torch

    gaps: list[float] = []
    net.eval()
    with torch.no_grad():
        for r in rollouts[:episodes]:
            ids = torch.tensor([r.prompt_ids + r.completion_ids])
            logp = torch.log_softmax(
                net(input_ids=ids, logits_to_keep=len(r.completion_ids) + 1).logits[0].float(), -1
            )
            for i, (token, sampled) in enumerate(zip(r.completion_ids, r.env_mask, strict=True)):
                if sampled:
                    gaps.append(abs(float(logp[i, token]) - r.logprobs[i]))
    return statistics.mean(gaps), max(gaps), len(gaps)


def grpo_side(args: argparse.Namespace, net: Any, tok: Any) -> None:
    spec = get_task(args.task)
    sides = args.sides.split(",")
    plain_agent = LocalAgent(
        "bench", temperature=1.0, top_p=1.0, max_new_tokens=args.tokens, batched=False
    )
    plain_agent._loaded = (net, tok)
    results: dict[str, list[tuple[float, float]]] = {s: [] for s in sides}
    gaps: list[tuple[float, float, int]] = []
    passes: dict[str, list[int]] = {s: [] for s in sides}
    for r in range(args.rounds):
        instance = spec.instance(100_000 + r, "easy")
        for side in sides:
            net.eval()
            t0 = time.perf_counter()
            if side == "plain":
                # One episode after another: a group costs group / plain_episodes times this.
                played = min(args.plain_episodes or args.group, args.group)
                sampled = plain_group(plain_agent, instance, played, args.turns)
                scale = args.group / played
                wall_played = time.perf_counter() - t0
                results[side].append((wall_played * scale, sampled / wall_played))
                print(
                    f"round {r} plain: {wall_played:7.1f} s for {played} episodes "
                    f"(x{scale:g} = {wall_played * scale:.1f} s/group), {sampled} sampled tokens, "
                    f"{sampled / wall_played:6.1f} tok/s",
                    flush=True,
                )
                continue
            else:
                opts = GRPOOptions(
                    max_turns=args.turns,
                    max_new_tokens=args.tokens,
                    max_completion_length=4096,
                    rollout_dtype="bfloat16" if side == "bf16" else "float32",
                    draft_tokens=3 if side in ("fp32", "bf16") or side.endswith("+drafts") else 0,
                )
                grpo.MERGE_AGREEING_ROWS = not side.startswith("unmerged")
                roller = EpisodeRoller(net, tok, opts)
                rollouts = roller.play_group(instance, args.group, seed=r)
                grpo.MERGE_AGREEING_ROWS = MERGE_DEFAULT
                sampled = sum(sum(x.env_mask) for x in rollouts)
                passes[side].append(roller.forward_passes)
                for kind, (n, tokens, secs) in roller.stats.items():
                    print(f"  {kind}: {int(n)} passes, {int(tokens)} tokens, {secs:.1f} s")
            wall = time.perf_counter() - t0
            results[side].append((wall, sampled / wall))
            print(
                f"round {r} {side:>5}: {wall:7.1f} s/group, {sampled} sampled tokens, "
                f"{sampled / wall:6.1f} tok/s",
                flush=True,
            )
            if side in ("bf16", "merged", "merged+drafts"):
                gaps.append(logprob_gap(net, rollouts))
                print(
                    f"  {side} vs fp32 log-prob |diff|: mean {gaps[-1][0]:.4f}, max {gaps[-1][1]:.4f}"
                )
    print(
        f"\n{spec.id} easy, group {args.group}, <= {args.turns} turns x {args.tokens} tokens, "
        f"temperature 1, {args.rounds} rounds (medians)"
    )
    print("| side | s/group | sampled tok/s | vs plain | forward passes |")
    print("| --- | ---: | ---: | ---: | ---: |")
    base = statistics.median(t for _, t in results["plain"]) if "plain" in results else None
    for side, v in results.items():
        wall = statistics.median(w for w, _ in v)
        rate = statistics.median(t for _, t in v)
        ratio = f"{rate / base:.1f}x" if base else "-"
        fp = str(int(statistics.median(passes[side]))) if passes[side] else "-"
        print(f"| {side} | {wall:.1f} | {rate:.1f} | {ratio} | {fp} |")
    if gaps:
        print(
            "recorded log-prob |diff| vs a float32 forward pass (bf16 and merged sides): "
            f"mean {statistics.mean(g[0] for g in gaps):.4f}, "
            f"max {max(g[1] for g in gaps):.4f} over {sum(g[2] for g in gaps)} sampled tokens"
        )


DEFAULT_MIN_COPY = local.MIN_COPY
EVAL_SIDES = {
    "plain": {"batched": False},
    "batched": {"draft_tokens": 0},
    "drafts": {},
    "uncopied": {"draft_tokens": 0},
}


def eval_side(args: argparse.Namespace, net: Any, tok: Any) -> None:
    from agentharness.rollout.runner import plan, run
    from agentharness.store.run import RunDir

    items = plan(
        [get_task(args.task)], n=args.eval, k=args.eval_k, seed=0, difficulty=args.difficulty
    )
    sides = args.eval_sides.split(",")
    walls: dict[str, list[float]] = {side: [] for side in sides}
    out: dict[str, tuple[int, dict[str, list[str]]]] = {}
    for round_ in range(args.eval_rounds):
        for side in sides if round_ % 2 == 0 else sides[::-1]:
            # "uncopied": no turn takes positions from another episode's cache
            local.MIN_COPY = 10**9 if side == "uncopied" else DEFAULT_MIN_COPY
            agent = LocalAgent(
                "bench",
                temperature=args.eval_temperature,
                max_new_tokens=args.tokens,
                max_batch=args.concurrency,
                **EVAL_SIDES[side],
            )
            agent._loaded = (net, tok)
            engine = agent.engine() if agent.batched else None
            with tempfile.TemporaryDirectory() as tmp:
                run_dir = RunDir(Path(tmp) / side)
                run_dir.create({"command": "bench"})

                async def go(agent: LocalAgent = agent, run_dir: RunDir = run_dir) -> None:
                    try:
                        await run(
                            items,
                            agent,
                            run_dir,
                            concurrency=args.concurrency,
                            budget_overrides={"max_turns": args.turns},
                        )
                    finally:
                        await agent.aclose()

                t0 = time.perf_counter()
                asyncio.run(go())
                wall = time.perf_counter() - t0
                records = list(run_dir.episodes())
            tokens = sum(r.usage.completion_tokens for r in records)
            texts = {
                f"{r.instance.seed}:{r.sample}": [
                    m.text for m in r.messages if m.role == "assistant"
                ]
                for r in records
            }
            walls[side].append(wall)
            out[side] = (tokens, texts)
            kept = (
                ""
                if engine is None
                else f", prompt tokens read {engine.tokens_read}, copied {engine.tokens_copied}"
                f", drafts kept {engine.drafts[1]} of {engine.drafts[0]}"
            )
            print(
                f"eval {side:>8}: {wall:7.1f} s, {tokens} sampled tokens, "
                f"{tokens / wall:6.1f} tok/s{kept}",
                flush=True,
            )
    local.MIN_COPY = DEFAULT_MIN_COPY
    base = sides[0]
    print(
        f"\neval: {args.eval} {args.task} {args.difficulty} instances x {args.eval_k} samples, "
        f"temperature {args.eval_temperature}, <= {args.turns} turns x {args.tokens} tokens, "
        f"concurrency {args.concurrency}, {args.eval_rounds} round(s)"
    )
    print(
        f"| path | s/eval (median) | sampled tok/s | speed vs {base} | transcripts equal {base}'s |"
    )
    print("| --- | ---: | ---: | ---: | --- |")
    for side in sides:
        wall = statistics.median(walls[side])
        tokens, texts = out[side]
        ratio = statistics.median(walls[base]) / wall
        same = texts == out[base][1]
        print(f"| {side} | {wall:.1f} | {tokens / wall:.1f} | {ratio:.2f}x | {same} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None)
    parser.add_argument("--task", default="thermal")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sides", default="plain,fp32,bf16")
    parser.add_argument(
        "--plain-episodes",
        type=int,
        default=0,
        help="play only this many of the group by the plain path and scale (it is sequential)",
    )
    parser.add_argument(
        "--eval", type=int, default=0, help="instances of the eval comparison (0: skip)"
    )
    parser.add_argument(
        "--eval-sides",
        default="plain,batched,drafts",
        help="eval paths: plain (model.generate per turn), batched (the engine), drafts "
        "(the engine with its default drafts), uncopied (the engine, no drafts, every prompt "
        "read by its own episode)",
    )
    parser.add_argument("--eval-k", type=int, default=1, help="samples per eval instance")
    parser.add_argument("--eval-temperature", type=float, default=0.0)
    parser.add_argument("--eval-rounds", type=int, default=1)
    parser.add_argument("--difficulty", default="easy", help="of the eval's instances")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    net, tok = load_trainable(args.model)
    if args.rounds:
        grpo_side(args, net, tok)
    if args.eval:
        eval_side(args, net, tok)


if __name__ == "__main__":
    main()
