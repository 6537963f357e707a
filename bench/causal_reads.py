"""A read from a conversation's first token: ``is_causal`` against a mask tensor, A/B in one process.

The decoder reads a prompt (each GRPO group's, each evaluation episode's first) in one
pass of the Llama decoding pass. With ``llama_forward.CAUSAL_READS`` the CPU flash
attention is told the mask is the plain causal one and skips the blocks past the
diagonal; without it, it gets the same mask as a boolean tensor and computes every block.
Reads ``--tokens`` random token ids (the attention's cost does not depend on which) into
a fresh decoder, ``--rounds`` times each way, alternating the order, and prints each read's
seconds, the medians' ratio and the largest difference between the two ways' logits.

    python bench/causal_reads.py --model SFT_CHECKPOINT --tokens 1790 --rounds 3

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from agentharness.train import llama_forward
from agentharness.train.decode import Decoder
from agentharness.train.model import load_trainable


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None, help="default: the bundled SmolLM2-135M")
    parser.add_argument("--tokens", type=int, default=1790)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    net, _ = load_trainable(args.model)
    ids = torch.randint(100, 40_000, (args.tokens,), generator=torch.Generator().manual_seed(0))
    seconds: dict[str, list[float]] = {"is_causal": [], "mask tensor": []}
    logits: dict[str, torch.Tensor] = {}
    for round_ in range(args.rounds):
        modes = list(seconds) if round_ % 2 == 0 else list(seconds)[::-1]
        for mode in modes:
            llama_forward.CAUSAL_READS = mode == "is_causal"
            decoder = Decoder(net, 1)
            seq = decoder.open()
            t0 = time.perf_counter()
            logits[mode] = decoder.step({seq: ids.tolist()})[seq]
            seconds[mode].append(time.perf_counter() - t0)
            print(f"round {round_} {mode:>11}: {seconds[mode][-1]:.2f} s", flush=True)
    llama_forward.CAUSAL_READS = True
    medians = {mode: statistics.median(s) for mode, s in seconds.items()}
    gap = float((logits["is_causal"] - logits["mask tensor"]).abs().max())
    print(
        f"{args.tokens}-token read: mask tensor {medians['mask tensor']:.2f} s, is_causal "
        f"{medians['is_causal']:.2f} s ({medians['mask tensor'] / medians['is_causal']:.2f}x); "
        f"largest logit difference {gap:.2e}"
    )


if __name__ == "__main__":
    main()
