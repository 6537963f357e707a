"""Attention in query blocks through batched products, against the CPU flash kernel.

Tried for the GRPO training pass (not kept): the flash-attention kernel is half of a
robot_reach group's pass on the AVX-512 BF16 VM, while the projections' products run
several times faster through oneDNN. This computes attention as flash attention does
(each query row's log-sum-exp kept, a block's probabilities recomputed in the backward)
but with each block's products handed to ``torch.bmm`` whole and the softmax in float32
tensor passes between them. SmolLM2-135M's shapes (9 query heads over 3 key-value heads,
64 dimensions), bfloat16, queries at the end of the keys (causal there), forward and
backward; the gradients are checked against a float32 reference beside the flash kernel's.

    python bench/attention_blocks.py --keys 2400 --queries 76,209,630

Figures: bench/RESULTS.md ("The AMD EPYC VM with AVX-512 BF16").
"""

from __future__ import annotations

import argparse
import functools
import math
from typing import Any

import torch
from attention_backward import median_ms

HEADS, KV_HEADS, DIM = 9, 3, 64
GROUP = HEADS // KV_HEADS


def _scores(q: Any, k: Any, start: int, end: int, offset: int) -> Any:
    """Scaled float32 scores of grouped queries ``start..end-1`` over the keys they see,
    shaped (kv heads, group, queries, keys), the block's own future masked."""
    n, seen = end - start, offset + end
    scores = torch.bmm(q[:, :, start:end].reshape(KV_HEADS, GROUP * n, DIM), k[:, :seen].mT)
    scores = scores.float().mul_(1 / math.sqrt(DIM)).view(KV_HEADS, GROUP, n, seen)
    rows = torch.arange(start, end).view(-1, 1) + offset
    cols = torch.arange(seen - n, seen).view(1, -1)
    scores[..., seen - n :].masked_fill_(cols > rows, float("-inf"))
    return scores


class BlockAttention(torch.autograd.Function):
    """Grouped queries (kv heads, group, queries, dim) over keys and values (kv heads,
    keys, dim), the queries being the last positions."""

    @staticmethod
    def forward(ctx: Any, q: Any, k: Any, v: Any, block: int) -> Any:
        queries, offset = q.shape[2], k.shape[1] - q.shape[2]
        out = torch.empty_like(q)
        lse = torch.empty(KV_HEADS, GROUP, queries)
        for start in range(0, queries, block):
            end = min(queries, start + block)
            scores = _scores(q, k, start, end, offset)
            top = torch.logsumexp(scores, -1, keepdim=True)
            lse[:, :, start:end] = top.squeeze(-1)
            probs = (scores - top).exp_().to(q.dtype).view(KV_HEADS, -1, offset + end)
            out[:, :, start:end] = torch.bmm(probs, v[:, : offset + end]).view_as(
                out[:, :, start:end]
            )
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.block = block
        return out

    @staticmethod
    def backward(ctx: Any, dout: Any) -> tuple[Any, ...]:
        q, k, v, out, lse = ctx.saved_tensors
        queries, offset = q.shape[2], k.shape[1] - q.shape[2]
        dout = dout.contiguous()
        dq = torch.empty(q.shape)
        dk, dv = torch.zeros(k.shape), torch.zeros(v.shape)
        delta = (dout.float() * out.float()).sum(-1)
        for start in range(0, queries, ctx.block):
            end = min(queries, start + ctx.block)
            n, seen = end - start, offset + end
            probs = (_scores(q, k, start, end, offset) - lse[:, :, start:end, None]).exp_()
            grad_out = dout[:, :, start:end].reshape(KV_HEADS, GROUP * n, DIM)
            dv[:, :seen] += torch.bmm(probs.to(q.dtype).view(KV_HEADS, -1, seen).mT, grad_out)
            dprobs = torch.bmm(grad_out, v[:, :seen].mT).float().view_as(probs)
            dscores = probs.mul_(dprobs.sub_(delta[:, :, start:end, None]))
            dscores = dscores.mul_(1 / math.sqrt(DIM)).to(q.dtype).view(KV_HEADS, -1, seen)
            dq[:, :, start:end] = torch.bmm(dscores, k[:, :seen]).view(KV_HEADS, GROUP, n, DIM)
            block_q = q[:, :, start:end].reshape(KV_HEADS, GROUP * n, DIM)
            dk[:, :seen] += torch.bmm(dscores.mT, block_q)
        return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None


def blocks(query: Any, key: Any, value: Any, block: int) -> Any:
    """(1, heads, queries, dim) attention in query blocks (query head h reads kv head h // 3)."""
    grouped = query[0].view(KV_HEADS, GROUP, query.shape[2], DIM)
    return BlockAttention.apply(grouped, key[0], value[0], block).view_as(query)


def flash(query: Any, key: Any, value: Any, mask: Any) -> Any:
    return torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, enable_gqa=True
    )


def grad_errors(attend: Any, tensors: tuple[Any, ...], dout: Any) -> list[float]:
    """Each input's largest gradient error relative to the float32 math reference."""
    reference = [t.detach().float().requires_grad_() for t in tensors[:3]]
    mask = tensors[3]
    flash(*reference, mask).backward(dout.float())
    for t in tensors[:3]:
        t.grad = None
    attend().backward(dout)
    return [
        float((t.grad.float() - r.grad).abs().max() / r.grad.abs().max())
        for t, r in zip(tensors[:3], reference, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=2400)
    parser.add_argument("--queries", default="76,209,630")
    parser.add_argument("--blocks", default="64,128,256")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = [int(x) for x in args.blocks.split(",")]
    print(f"{args.keys} keys, bfloat16, {args.threads} threads; ms per call fwd+bwd, median")
    print("| queries | flash | " + " | ".join(f"blocks of {b}" for b in sizes) + " |")
    print("| ---: | ---: |" + " ---: |" * len(sizes))
    for q in (int(x) for x in args.queries.split(",")):
        generator = torch.Generator().manual_seed(q)
        query = torch.randn(1, HEADS, q, DIM, generator=generator).bfloat16().requires_grad_()
        key = torch.randn(1, KV_HEADS, args.keys, DIM, generator=generator).bfloat16()
        value = torch.randn(1, KV_HEADS, args.keys, DIM, generator=generator).bfloat16()
        key.requires_grad_()
        value.requires_grad_()
        dout = torch.randn(1, HEADS, q, DIM, generator=generator).bfloat16()
        mask = torch.ones(q, args.keys, dtype=torch.bool).tril(args.keys - q)
        tensors = (query, key, value, mask)
        runs = {"flash": functools.partial(flash, *tensors)}
        runs |= {f"{b}": functools.partial(blocks, query, key, value, b) for b in sizes}
        cells = []
        for name, attend in runs.items():
            errors = grad_errors(attend, tensors, dout)
            print(f"  {q} queries, {name}: largest relative gradient error (q, k, v) "
                  + ", ".join(f"{e:.4f}" for e in errors))  # fmt: skip
            cells.append(median_ms(lambda a=attend, d=dout: a().backward(d), args.repeats))
        print(f"| {q} | " + " | ".join(f"{c:.1f}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
