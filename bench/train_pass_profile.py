"""The GRPO training pass on one real group: what each option of the pass costs.

Plays one group with ``EpisodeRoller`` (as ``train grpo`` does), lays it out as TRL does
(one prompt, completions right-padded; a completion holds the model's turns *and* the
environment's replies between them), then times ``shared_prompt_logps`` forward and
backward under each variant, rounds alternating so load drifts hit all alike:

- ``fp32``: float32, the exact path, every episode's activations recomputed in the
  backward (``--keep-activations-gb 0``);
- ``fp32-keep``: the same keeping every episode's activations (what ``train grpo`` does
  where they fit in half the available memory);
- ``bf16``: bfloat16 autocast (``--train-dtype bfloat16``, the default), the head scoring
  only the model's tokens (what ``train grpo`` does: the loss reads no others);
- ``bf16-all``: the same head scoring every completion position;
- ``bf16-trl-head``: TRL's fused LM head instead (the pass before 2026-12-01: every
  position, in small tiles);
- ``bf16-lora``: ``bf16`` on a rank-16 LoRA adapter (``--lora``);
- ``bf16-nockpt``: ``bf16`` keeping every episode's activations (more memory);
- ``bf16-prompt-only``: ``bf16`` sharing only the prompt, not the completions' common
  opening (the pass before 2026-12-02).

Each row reports the median forward and backward seconds and how far the variant's
log-probabilities of the model's tokens are from the first variant's.

    python bench/train_pass_profile.py --model experiments/out/v14/models/sft/final \\
        --task robot_reach --seed 100001 --threads 2

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from typing import Any

import torch
from group_setup import group_parser, group_roller

from agentharness.train import grpo
from agentharness.train.grpo import shared_prompt_logps
from agentharness.train.model import lora_config

VARIANTS = (
    "fp32",
    "fp32-keep",
    "bf16",
    "bf16-all",
    "bf16-trl-head",
    "bf16-lora",
    "bf16-nockpt",
    "bf16-prompt-only",
)


def group_batch(rollouts: list[Any]) -> tuple[Any, Any, Any, int]:
    """``(input_ids, attention_mask, model_mask, logits_to_keep)`` laid out as TRL's pass gets them."""
    prompt = rollouts[0].prompt_ids
    width = max(len(r.completion_ids) for r in rollouts)
    ids, mask, model_mask = [], [], []
    for r in rollouts:
        pad = width - len(r.completion_ids)
        ids.append(prompt + r.completion_ids + [0] * pad)
        mask.append([1] * (len(prompt) + len(r.completion_ids)) + [0] * pad)
        model_mask.append(r.env_mask + [0] * pad)
    return torch.tensor(ids), torch.tensor(mask), torch.tensor(model_mask).bool(), width


def pass_once(net: Any, batch: tuple[Any, Any, Any, int], variant: str) -> tuple[float, float, Any]:
    """One forward and backward of the group's log-probabilities: seconds of each, the log-probs."""
    ids, mask, model_mask, width = batch
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=variant.startswith("bf16"))
    own_head = grpo._head_parts
    if variant == "bf16-trl-head":
        grpo._head_parts = lambda model: None  # what makes the pass fall back to TRL's head
    t0 = time.perf_counter()
    try:
        with autocast:
            out = shared_prompt_logps(
                net,
                ids,
                mask,
                width,
                compute_entropy=True,
                keep_activations=math.inf if variant in ("bf16-nockpt", "fp32-keep") else 0.0,
                score_mask=None if variant in ("bf16-all", "bf16-trl-head") else model_mask,
                share_prefixes=variant != "bf16-prompt-only",
            )
    finally:
        grpo._head_parts = own_head
    if out is None:
        raise SystemExit("the shared-prompt pass does not apply to this group")
    logps = out[0]
    t1 = time.perf_counter()
    logps.sum().backward()
    t2 = time.perf_counter()
    net.zero_grad(set_to_none=True)
    return t1 - t0, t2 - t1, logps.detach().float()


def main() -> None:
    from peft import get_peft_model
    from trl.trainer.utils import add_fused_lm_head

    parser = group_parser(max_turns=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {', '.join(VARIANTS)}")
    base, _, roller, instance = group_roller(args)
    t0 = time.perf_counter()
    rollouts = roller.play_group(instance, args.group, seed=0)
    print(f"rollouts: {time.perf_counter() - t0:.1f} s")
    batch = group_batch(rollouts)
    model_mask = batch[2]
    lengths = [len(r.completion_ids) for r in rollouts]
    print(
        f"{instance.task} seed {args.seed}: prompt {len(rollouts[0].prompt_ids)} tokens; "
        f"completions {min(lengths)}-{max(lengths)} tokens (mean {statistics.mean(lengths):.0f}), "
        f"of which the model wrote {int(model_mask.sum()) / len(rollouts):.0f} a row on average"
    )
    tree = grpo._completion_tree(
        batch[0][:, -batch[3] :], model_mask, list(range(len(rollouts))), lengths
    )

    def tree_tokens(node: grpo._Node) -> int:
        return node.end - node.start + sum(tree_tokens(c) for c in node.children)

    def shape(node: grpo._Node) -> str:
        inner = " ".join(shape(c) for c in node.children)
        return f"{len(node.rows)}:{node.end - node.start}" + (f"({inner})" if inner else "")

    print(
        f"the completions' prefix tree (rows:tokens): {shape(tree)}\n"
        f"the completions' prefix tree: {tree_tokens(tree)} tokens to compute of {sum(lengths)} "
        f"(all rows open alike for {tree.end})"
    )

    lora = None
    if "bf16-lora" in variants:
        # The head goes on before the adapter (TRL's order), on a copy made before `base`
        # is patched: a patched forward closes over its own model.
        adapted = copy.deepcopy(base)
        add_fused_lm_head(adapted, outputs=("log_probs", "entropy"))
        lora = get_peft_model(adapted, lora_config(16, 32))
        lora.train()
    add_fused_lm_head(base, outputs=("log_probs", "entropy"))
    base.train()

    times: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    drift: dict[str, float] = {}
    reference = None
    pass_once(lora if variants[0] == "bf16-lora" else base, batch, variants[0])  # warm-up, untimed
    for r in range(args.rounds):
        for v in variants:
            net = lora if v == "bf16-lora" else base
            fwd, bwd, logps = pass_once(net, batch, v)
            times[v].append((fwd, bwd))
            if reference is None:
                reference = logps
            drift[v] = float((logps - reference).abs()[model_mask].max())
            print(f"round {r} {v:>12}: forward {fwd:6.1f} s, backward {bwd:6.1f} s")
    print(f"\n{args.threads} thread(s), {args.rounds} rounds (medians)")
    first = variants[0]
    base_pass = sum(statistics.median(x[i] for x in times[first]) for i in (0, 1))
    print(
        f"| variant | forward s | backward s | pass s | vs {first} | max abs. log-prob change vs {first} |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for v, ts in times.items():
        fwd = statistics.median(f for f, _ in ts)
        bwd = statistics.median(b for _, b in ts)
        speed = base_pass / (fwd + bwd)
        print(f"| {v} | {fwd:.1f} | {bwd:.1f} | {fwd + bwd:.1f} | {speed:.2f}x | {drift[v]:.3f} |")


if __name__ == "__main__":
    main()
