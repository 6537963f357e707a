"""The decoder's Llama pass against the model's own forward, on whole GRPO groups, A/B in one process.

The same group (same instance, same sampling seed) is played with
``decode.LLAMA_FORWARD`` on (``agentharness.train.llama_forward``: fused q/k/v and
gate/up products, no module dispatch) and off (transformers' forward with the decoder's
attention), alternating the order each round. Per round: the group's wall time, the
milliseconds per decoding pass and the seconds in reading passes, and whether both
sampled the same tokens. With a float32 model they agree up to the products' summation
order; with a bfloat16 sampling copy (``--rollout-dtype auto`` on a CPU with fast
bfloat16) the Llama pass keeps its cache in bfloat16 where the model forward's is float32,
so the sampled tokens part somewhere: the two groups are then different draws on the same
instance. Each group's
recorded sampling log-probabilities are also checked against the float32 model's forward
pass over the same tokens (mean and largest absolute difference over the sampled tokens):
how far off-policy the bfloat16 samples are for a trainer that rescores in float32.

    python bench/decode_forward.py --model experiments/out/v27/models/sft/final \\
        --task thermal --difficulty medium --max-new-tokens 192 --draft-tokens 3 --rounds 3

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import statistics
from functools import partial
from typing import Any

import torch
from group_setup import alternating_rounds, group_parser, group_roller

from agentharness.train import decode

MODES = {"llama forward": True, "model forward": False}


def main() -> None:
    parser = group_parser(max_turns=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    net, _, roller, instance = group_roller(args)
    walls: dict[str, list[float]] = {m: [] for m in MODES}
    pass_ms: dict[str, list[float]] = {m: [] for m in MODES}
    tokens: dict[str, list[list[int]]] = {}
    gaps: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
    print(
        f"{instance.task} ({args.difficulty}) seed {args.seed}, group {args.group}, "
        f"{args.threads} thread(s), drafts {args.draft_tokens}"
    )
    switches = {mode: partial(setattr, decode, "LLAMA_FORWARD", on) for mode, on in MODES.items()}
    for played in alternating_rounds(roller, instance, args.group, args.rounds, switches):
        walls[played.mode].append(played.wall)
        pass_ms[played.mode].append(played.pass_ms)
        tokens[played.mode] = played.completion_ids
        gaps[played.mode].append(logprob_gap(net, played.rollouts))
        mean, largest = gaps[played.mode][-1]
        print(f"{played.line(13)}, log-prob gap to float32 mean {mean:.5f} max {largest:.3f}")
    base = statistics.median(walls["model forward"])
    for mode in MODES:
        wall = statistics.median(walls[mode])
        print(
            f"{mode:>13}: {wall:.1f} s a group (median of {args.rounds}), "
            f"{statistics.median(pass_ms[mode]):.1f} ms a decoding pass, {base / wall:.2f}x, "
            f"log-prob gap to float32 mean {statistics.median(g[0] for g in gaps[mode]):.5f} "
            f"(median of rounds), max {max(g[1] for g in gaps[mode]):.3f}"
        )
    same = tokens["llama forward"] == tokens["model forward"]
    print(f"same tokens sampled both ways (last round): {same}")


def logprob_gap(model: Any, rollouts: list[Any]) -> tuple[float, float]:
    """Mean and largest |recorded - float32 forward| log-probability over the sampled tokens."""
    diffs = []
    with torch.no_grad():
        for r in rollouts:
            ids = torch.tensor([r.prompt_ids + r.completion_ids])
            logits = model(ids).logits[0, len(r.prompt_ids) - 1 : -1].float()
            targets = torch.tensor(r.completion_ids)[:, None]
            logps = torch.log_softmax(logits, -1).gather(1, targets)[:, 0]
            sampled = torch.tensor(r.env_mask, dtype=torch.bool)
            diffs.append((logps[sampled] - torch.tensor(r.logprobs)[sampled]).abs())
    every = torch.cat(diffs)
    return every.mean().item(), every.max().item()


if __name__ == "__main__":
    main()
