"""What the benches that play one GRPO group share: their arguments and the roller.

``rollout_profile.py``, ``rollout_overheads.py`` and ``train_pass_profile.py`` each play
a group of one instance (difficulty easy unless ``--difficulty``) with the bundled model
(or ``--model``) and the sampling dtype ``train grpo`` picks by default (``--rollout-dtype
auto``: a bfloat16 copy where this CPU has fast bfloat16 products, the float32 model where it
has not). The A/B benches (``decode_forward.py``, ``split_products.py``,
``onednn_products.py``, ``rollout_overheads.py``) time the group under two settings with
:func:`alternating_rounds` (most through :func:`compare_settings`, which also reports).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from agentharness import get_task
from agentharness.core.instance import Instance
from agentharness.train.grpo import EpisodeRoller, GRPOOptions
from agentharness.train.model import load_trainable, resolve_dtype


def group_parser(max_turns: int) -> argparse.ArgumentParser:
    """The arguments every group bench takes (a script adds its own)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M")
    parser.add_argument("--task", default="robot_reach")
    parser.add_argument("--seed", type=int, default=100001, help="the instance's seed")
    parser.add_argument("--difficulty", default="easy")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-turns", type=int, default=max_turns)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument(
        "--draft-tokens", type=int, default=0, help="speculative drafts a row (0: none)"
    )
    parser.add_argument("--rollout-dtype", default="auto", help="auto, float32 or bfloat16")
    return parser


def group_roller(
    args: argparse.Namespace, rollout_dtype: str | None = None
) -> tuple[Any, Any, EpisodeRoller, Instance]:
    """The model, its tokenizer, a roller playing as ``train grpo`` does, and the instance."""
    torch.set_num_threads(args.threads)
    net, tok = load_trainable(args.model)
    opts = GRPOOptions(
        max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens,
        max_completion_length=4096,
        temperature=args.temperature,
        draft_tokens=args.draft_tokens,
        rollout_dtype=resolve_dtype(rollout_dtype or args.rollout_dtype, "--rollout-dtype"),
    )
    instance = get_task(args.task).instance(args.seed, args.difficulty)
    return net, tok, EpisodeRoller(net, tok, opts), instance


@dataclass(frozen=True)
class GroupRound:
    """One timed play of the group under one setting (``mode``)."""

    round: int
    mode: str
    wall: float  # seconds for the whole group
    passes: int  # decoding passes
    pass_ms: float  # milliseconds a decoding pass
    reads: int  # reading passes (prompts, tool replies)
    read_tokens: int
    read_s: float
    rollouts: list[Any]

    @property
    def completion_ids(self) -> list[list[int]]:
        return [list(r.completion_ids) for r in self.rollouts]

    @property
    def sampled(self) -> int:
        """Tokens the model sampled (tool replies excluded)."""
        return sum(sum(r.env_mask) for r in self.rollouts)

    def line(self, width: int) -> str:
        """The round's figures, as every A/B bench prints them."""
        return (
            f"round {self.round} {self.mode:>{width}}: {self.wall:6.1f} s, {self.passes} decoding "
            f"passes {self.pass_ms:6.1f} ms each, {self.reads} reads ({self.read_tokens} tokens) "
            f"{self.read_s:5.1f} s, {self.sampled} sampled tokens"
        )


def alternating_rounds(
    roller: EpisodeRoller,
    instance: Instance,
    group: int,
    rounds: int,
    modes: Mapping[str, Callable[[], object]],
) -> Iterator[GroupRound]:
    """Play the same group (sampling seed 0) under each setting, round after round.

    ``modes`` maps a setting's name to what switches it on. The order alternates every
    round so a drift in the machine's load falls on every setting alike; a warm-up play,
    untimed, comes first.
    """
    roller.play_group(instance, group, seed=0)
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        for mode in order:
            modes[mode]()
            started = time.perf_counter()
            rollouts = roller.play_group(instance, group, seed=0)
            wall = time.perf_counter() - started
            passes, _, seconds = roller.stats["decode"]
            reads, read_tokens, read_s = roller.stats["read"]
            yield GroupRound(
                r,
                mode,
                wall,
                int(passes),
                1000 * seconds / max(1, passes),
                int(reads),
                int(read_tokens),
                read_s,
                rollouts,
            )


def compare_settings(
    roller: EpisodeRoller,
    instance: Instance,
    args: argparse.Namespace,
    switches: Mapping[str, Callable[[], object]],
    baseline: str,
) -> dict[str, list[GroupRound]]:
    """Play the group under each setting (:func:`alternating_rounds`), print each round,
    then each setting's median group time and decoding pass against ``baseline``'s."""
    width = max(map(len, switches))
    played: dict[str, list[GroupRound]] = {mode: [] for mode in switches}
    for group_round in alternating_rounds(roller, instance, args.group, args.rounds, switches):
        played[group_round.mode].append(group_round)
        print(group_round.line(width))

    def medians(mode: str) -> tuple[float, float]:
        rounds = played[mode]
        return statistics.median(r.wall for r in rounds), statistics.median(
            r.pass_ms for r in rounds
        )

    base_wall, base_ms = medians(baseline)
    for mode in played:
        wall, ms = medians(mode)
        print(
            f"{mode:>{width}}: {wall:.1f} s a group (median of {args.rounds}), "
            f"{base_wall / wall:.2f}x; {ms:.1f} ms a decoding pass, {base_ms / ms:.2f}x"
        )
    return played
