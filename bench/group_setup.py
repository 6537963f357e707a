"""What the benches that play one GRPO group share: their arguments and the roller.

``rollout_profile.py``, ``rollout_overheads.py`` and ``train_pass_profile.py`` each play
a group of one instance (difficulty easy unless ``--difficulty``) with the bundled model
(or ``--model``) and the sampling dtype ``train grpo`` picks by default (``--rollout-dtype
auto``: a bfloat16 copy where this CPU has fast bfloat16 products, the float32 model where it
has not).
"""

from __future__ import annotations

import argparse
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
