"""A decoding pass of a Llama-architecture model written out in a few tensor operations.

:class:`~agentharness.train.decode.Decoder` feeds a model a handful of tokens per row per
pass. Through transformers' modules such a pass is ~1,000 small operations plus the
modules' Python dispatch, and the weights' products are many thin ones (q, k and v, gate
and up apart). :class:`LlamaForward` computes the same pass over the same weights with
q/k/v and gate/up each fused into one product, attending over a :class:`BlockCache` (a
forked group's prompt stored once, each row's tail as one dense block): in float32 the
logits are those of the model's own forward (tests compare them), in fewer, larger
products (``bench/decode_forward.py`` times a group both ways).

Only plain Llama-family models qualify (:func:`LlamaForward.build` returns None for
anything else, and the decoder then runs the model's own forward): no attention or MLP
biases, SiLU gates, rotary embeddings whose frequencies do not depend on the sequence
length. SmolLM2 is one.
"""

from __future__ import annotations

from typing import Any

# Rotary types whose inverse frequencies are fixed at load time (``dynamic`` and
# ``longrope`` change them with the sequence length, which this pass does not follow).
_STATIC_ROPE = ("default", "linear", "llama3")

# A float32 product over a few rows (a decoding step) with a wide weight runs faster as one
# product per block of the weight's output rows: on an AVX2 CPU MKL's sgemm computed an
# (8 x 576) @ (576 x 49,152) head product at ~2 GB/s of weights, in 512-row blocks twice as
# fast and bit for bit the same (bench/RESULTS.md, "Wide float32 products in blocks").
# Passes that read a prompt or a reply (hundreds of rows) keep the one product.
SPLIT_PRODUCTS = True
SPLIT_BLOCK_ROWS = 512
SPLIT_MIN_OUT = 2048  # weights with fewer output rows gained nothing
SPLIT_MAX_TOKENS = 64  # rows x tokens fed in a pass; above it the one product is as fast

# Faster still: float32 products through oneDNN with the weights packed once for its
# kernels. On the AVX2-only AMD EPYC VM, MKL's sgemm (torch's F.linear) ran SmolLM2's
# products at 9-25 GFLOP/s over 8 rows and oneDNN's at 37-44, and faster at 32 and 512
# rows too: a group's decoding pass 1.23x (bench/RESULTS.md, "oneDNN products"). The
# results differ from MKL's only in summation order. Without oneDNN, the blocks above.
ONEDNN_PRODUCTS = True

# A read of every row from its first position attends under ``is_causal`` rather than a
# mask tensor, so the CPU flash attention skips the blocks past the diagonal instead of
# computing and masking them: a 1,790-token read 1.21x, the same logits (False: always the
# mask; bench/causal_reads.py times the two).
CAUSAL_READS = True


class LlamaForward:
    """``pass_(input_ids, position_ids, cache, keep)`` -> logits of the last ``keep`` fed
    positions of each row, for a Llama model whose weights are read at construction.

    The fused q/k/v and gate/up weights are copies made when the object is built: build
    one per set of weights (the decoder does, per group), not once for a model that trains.
    """

    def __init__(self, model: Any) -> None:
        import torch

        inner = model.model
        config = model.config
        self.heads = config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.eps = config.rms_norm_eps
        self.scaling = self.head_dim**-0.5
        rotary = inner.rotary_emb
        self.inv_freq = rotary.inv_freq.float()
        self.rope_scale = float(getattr(rotary, "attention_scaling", 1.0))
        self.embed = inner.embed_tokens.weight
        self.dtype = self.embed.dtype
        self.final_norm = inner.norm.weight
        self.layers: list[tuple[Any, Product, Product, Any, Product, Product]] = []
        with torch.no_grad():
            self.head = Product(model.lm_head.weight)
            for layer in inner.layers:
                attn, mlp = layer.self_attn, layer.mlp
                self.layers.append(
                    (
                        layer.input_layernorm.weight,
                        Product(
                            torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
                        ),
                        Product(attn.o_proj.weight),
                        layer.post_attention_layernorm.weight,
                        Product(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight])),
                        Product(mlp.down_proj.weight),
                    )
                )

    @classmethod
    def build(cls, model: Any) -> LlamaForward | None:
        """The pass for ``model``, or None when it is not a plain Llama-family model."""
        config = getattr(model, "config", None)
        inner = getattr(model, "model", None)
        if config is None or inner is None or hasattr(model, "peft_config"):
            return None
        rope = getattr(config, "rope_parameters", None) or {}
        if (
            getattr(config, "model_type", None) != "llama"
            or getattr(config, "attention_bias", False)
            or getattr(config, "mlp_bias", False)
            or getattr(config, "hidden_act", None) != "silu"
            or getattr(config, "pretraining_tp", 1) != 1
            or rope.get("rope_type", "default") not in _STATIC_ROPE
            or getattr(model, "lm_head", None) is None
            or not hasattr(getattr(inner, "rotary_emb", None), "inv_freq")
        ):
            return None
        return cls(model)

    def _norm(self, hidden: Any, weight: Any) -> Any:
        # LlamaRMSNorm: the statistics in float32, the result back in the model's dtype
        import torch

        x = hidden.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return weight * x.to(self.dtype)

    def __call__(self, input_ids: Any, position_ids: Any, cache: BlockCache, keep: int) -> Any:
        """Logits after the last ``keep`` fed tokens of each row; ``cache`` is set up for
        this pass (:meth:`BlockCache.begin`) and gets the pass's keys and values."""
        import torch
        import torch.nn.functional as F

        batch, width = input_ids.shape
        heads, kv_heads, dim = self.heads, self.kv_heads, self.head_dim
        q_size, kv_size = heads * dim, kv_heads * dim
        hidden = F.embedding(input_ids, self.embed)
        # cos/sin as LlamaRotaryEmbedding makes them: float32 angles, cast to the model's dtype
        angles = position_ids[..., None].float() * self.inv_freq
        angles = torch.cat((angles, angles), dim=-1)
        cos = (angles.cos() * self.rope_scale).to(self.dtype)[:, None]
        sin = (angles.sin() * self.rope_scale).to(self.dtype)[:, None]
        half = dim // 2

        def rotate(x: Any) -> Any:
            return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

        for index, (norm_in, qkv_w, o_w, norm_post, gate_up_w, down_w) in enumerate(self.layers):
            qkv = qkv_w(self._norm(hidden, norm_in))
            q = qkv[..., :q_size].view(batch, width, heads, dim).transpose(1, 2)
            k = (
                qkv[..., q_size : q_size + kv_size]
                .view(batch, width, kv_heads, dim)
                .transpose(1, 2)
            )
            v = qkv[..., q_size + kv_size :].view(batch, width, kv_heads, dim).transpose(1, 2)
            out = cache.attend(index, rotate(q), rotate(k), v, self.scaling)
            hidden = hidden + o_w(out.reshape(batch, width, q_size))
            gate, up = gate_up_w(self._norm(hidden, norm_post)).chunk(2, dim=-1)
            hidden = hidden + down_w(F.silu(gate) * up)
        return self.head(self._norm(hidden[:, -keep:], self.final_norm))


class Product:
    """``F.linear(x, weight)`` the fastest way this machine has: through oneDNN with the
    weight packed for it (float32, ONEDNN_PRODUCTS), else in blocks of output rows over
    a few rows (SPLIT_PRODUCTS), else as one product."""

    def __init__(self, weight: Any) -> None:
        import torch

        self.packed = _packed(weight)
        # a packed weight is all a product needs (the fused copies are not kept twice)
        self.weight: Any = weight if self.packed is None else None
        self.blocks: tuple[Any, ...] | None = None
        if (
            self.packed is None
            and weight.dtype == torch.float32
            and weight.shape[0] >= SPLIT_MIN_OUT
        ):
            self.blocks = tuple(weight.split(SPLIT_BLOCK_ROWS))

    def __call__(self, x: Any) -> Any:
        import torch
        import torch.nn.functional as F

        if self.packed is not None:
            return torch.ops.mkldnn._linear_pointwise(x, self.packed, None, "none", [], "")
        if self.blocks is None or not SPLIT_PRODUCTS or x.numel() > SPLIT_MAX_TOKENS * x.shape[-1]:
            return F.linear(x, self.weight)
        return torch.cat([F.linear(x, block) for block in self.blocks], dim=-1)


def _packed(weight: Any) -> Any | None:
    """``weight`` packed for oneDNN's float32 kernels, or None where they are not used."""
    import torch

    if (
        not ONEDNN_PRODUCTS
        or weight.dtype != torch.float32
        or weight.device.type != "cpu"
        or not torch.backends.mkldnn.is_available()
    ):
        return None
    try:
        # the batch-size hint picks a layout; the packed weight serves any number of rows
        return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), 32)
    except (AttributeError, RuntimeError):  # a torch without the op: MKL's products
        return None


class BlockCache:
    """The Llama pass's key/value cache: a shared prefix and each row's tail, each one dense block.

    A group's episodes fork from one prompt (:meth:`Decoder.fork`): its keys and values
    become the ``prefix`` (per layer ``(kv_heads, P, head_dim)``), stored once, and each
    row keeps only what follows it in its ``tail`` slot (per layer ``(slots, kv_heads,
    capacity, head_dim)``; a row's position ``p`` is at ``p - offset``). A decoding step
    attends over the prefix with one product for every row's queries and over the slots
    ``lo..hi-1`` of the tails as one contiguous block, every allocated position masked
    past each row's own end. Contiguous blocks matter on a CPU: a bfloat16 batched product
    over strided views of a bigger buffer is copied first (and so was slower than float32),
    one over a contiguous block runs ~2x faster than float32's (bench/RESULTS.md). So the
    cache is in the model's dtype, and the tails grow by :data:`~agentharness.train.decode.GROW`
    positions at a time (an allocation that outgrows its rows is shrunk on :meth:`shrink`).
    Scores are rounded to that dtype, then softmaxed in float32, as transformers' eager
    attention does for a bfloat16 model.
    """

    def __init__(
        self, layers: int, kv_heads: int, head_dim: int, dtype: Any, device: Any, slots: int
    ) -> None:
        self.layers, self.kv_heads, self.head_dim = layers, kv_heads, head_dim
        self.dtype, self.device = dtype, device
        self.slots = 0
        self.capacity = 0
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.prefix: list[tuple[Any, Any]] = []  # per layer; empty: no shared prefix
        self.prefix_len = 0
        # the current pass (set by begin)
        self.runs: list[slice] = []  # the pass's slots, as runs of adjacent ones
        self.write_rows: Any = None
        self.write_index: Any = None
        self.positions: Any = None
        self.tail_len = 0
        self.from_start = False
        self._biases: dict[tuple[int, int], Any] = {}
        self.reserve(slots, 1)

    def _allocate(self, slots: int, capacity: int, keep: int) -> None:
        """Buffers of ``slots`` x ``capacity``, the first ``keep`` positions of the old ones kept."""
        from agentharness.train.decode import regrow

        regrow(self, (slots, self.kv_heads, capacity, self.head_dim), self.slots, keep)
        self.slots, self.capacity = slots, capacity

    def reserve(self, slots: int, capacity: int) -> None:
        """Room for ``slots`` rows (doubling) of ``capacity`` tail positions (in steps of GROW)."""
        from agentharness.train.decode import GROW

        if slots <= self.slots and capacity <= self.capacity:
            return
        new_slots = max(slots, 2 * self.slots) if slots > self.slots else self.slots
        new_cap = max(self.capacity, -(-capacity // GROW) * GROW)
        self._allocate(new_slots, new_cap, self.capacity)

    def shrink(self, needed: int) -> None:
        """Give back tail positions beyond ``needed`` (rounded up to GROW) once they are two
        steps or more: every allocated position costs a decoding step's attention."""
        from agentharness.train.decode import GROW

        tight = max(GROW, -(-needed // GROW) * GROW)
        if self.capacity >= tight + 2 * GROW:
            self._allocate(self.slots, tight, min(needed, tight))

    def make_prefix(self, slot: int, length: int) -> None:
        """The first ``length`` positions of ``slot`` become the shared prefix; tails restart empty."""
        self.prefix = [
            (k[slot, :, :length].clone(), v[slot, :, :length].clone())
            for k, v in zip(self.keys, self.values, strict=True)
        ]
        self.prefix_len = length
        self.capacity = 0  # nothing to keep: every tail is empty now
        self._allocate(self.slots, 0, 0)
        self.reserve(self.slots, 1)

    def copy_slot(self, src: int, dst: int, length: int, start: int = 0) -> None:
        """Tail positions ``start..length-1`` of ``src`` into ``dst``."""
        for store in (self.keys, self.values):
            for buf in store:
                buf[dst, :, start:length] = buf[src, :, start:length]

    def begin(self, slots: list[int], write_index: Any, positions: Any, tail_len: int) -> None:
        """Set up a pass over ``slots`` (ascending): row ``r`` of the pass is slot
        ``slots[r]``, its new keys go to tail positions ``write_index[r]``, its queries sit
        at absolute ``positions[r]``. Slots need not be adjacent: a decoding step attends
        over each run of adjacent ones in place (no copy of their tails)."""
        import torch

        from agentharness.train.decode import FEW_QUERIES

        runs: list[slice] = []
        for slot in slots:
            if runs and runs[-1].stop == slot:
                runs[-1] = slice(runs[-1].start, slot + 1)
            else:
                runs.append(slice(slot, slot + 1))
        self.runs = runs
        self.write_rows = torch.tensor(slots, device=self.device)[:, None].expand_as(write_index)
        self.write_index = write_index
        self.positions = positions
        self.tail_len = tail_len
        self._biases = {}
        # a read of every row from its first position: the plain causal mask (CAUSAL_READS)
        width = positions.shape[1]
        self.from_start = (
            CAUSAL_READS
            and width > FEW_QUERIES
            and not self.prefix_len
            and tail_len == width
            and bool((positions[:, 0] == 0).all())
        )

    def attend(self, layer: int, query: Any, key: Any, value: Any, scale: float) -> Any:
        """Store the pass's new ``key``/``value`` (B, kv_heads, q, D) and attend ``query``
        (B, heads, q, D) over the prefix and each row's tail; returns (B, q, heads, D)."""
        import torch
        import torch.nn.functional as F

        k_buf, v_buf = self.keys[layer], self.values[layer]
        k_buf[self.write_rows, :, self.write_index] = key.transpose(1, 2).to(self.dtype)
        v_buf[self.write_rows, :, self.write_index] = value.transpose(1, 2).to(self.dtype)
        batch, heads, q_len, dim = query.shape
        kv_heads, prefix = self.kv_heads, self.prefix_len
        from agentharness.train.decode import FEW_QUERIES

        if q_len > FEW_QUERIES:
            # a read (a prompt, a tool reply): CPU flash attention over prefix + tails
            if len(self.runs) > 1:
                raise ValueError("a read runs over adjacent slots only")
            (rows,) = self.runs
            keys = k_buf[rows, :, : self.tail_len]
            values = v_buf[rows, :, : self.tail_len]
            if prefix:
                pk, pv = self.prefix[layer]
                keys = torch.cat([pk.expand(batch, -1, -1, -1), keys], dim=2)
                values = torch.cat([pv.expand(batch, -1, -1, -1), values], dim=2)
            mask = None
            if not self.from_start:
                visible = torch.arange(prefix + self.tail_len, device=self.device)
                mask = visible[None, None, None, :] <= self.positions[:, None, :, None]
            out = F.scaled_dot_product_attention(
                query.to(self.dtype),
                keys,
                values,
                attn_mask=mask,
                is_causal=self.from_start,
                scale=scale,
                enable_gqa=kv_heads != heads,
            )
            return out.to(query.dtype).transpose(1, 2).contiguous()
        # A decoding step or a short speculative feed. Query heads sharing a key-value head
        # are rows of one product (no copy of the keys per query head); the scale goes on
        # the few queries and the mask is added inside the tails' product.
        group = heads // kv_heads
        q = (query.to(self.dtype) * scale).reshape(batch, kv_heads, group * q_len, dim)
        bias = self._tail_bias(group, q_len, k_buf.shape[2])
        outs, first = [], 0
        for run in self.runs:  # each run of adjacent slots attends over its tails in place
            n = run.stop - run.start
            rows = slice(first, first + n)
            outs.append(
                self._attend_run(
                    layer,
                    q[rows],
                    k_buf[run],
                    v_buf[run],
                    bias[first * kv_heads : (first + n) * kv_heads],
                )
            )
            first += n
        out = outs[0] if len(outs) == 1 else torch.cat(outs)
        out = out.reshape(batch, heads, q_len, dim)
        return out.to(query.dtype).transpose(1, 2).contiguous()

    def _attend_run(self, layer: int, q: Any, tail_k: Any, tail_v: Any, bias: Any) -> Any:
        """Scaled queries ``q`` (B, kv_heads, G*q, D) of rows whose tails are ``tail_k`` /
        ``tail_v`` (B, kv_heads, cap, D) over the prefix and those tails; (B, kv_heads, G*q, D)."""
        import torch

        batch, kv_heads, rows, dim = q.shape
        cap, prefix = tail_k.shape[2], self.prefix_len
        tail = torch.baddbmm(
            bias,
            q.reshape(batch * kv_heads, rows, dim),
            tail_k.view(batch * kv_heads, cap, dim).transpose(1, 2),
        ).view(batch, kv_heads, rows, cap)
        if prefix:
            pk, pv = self.prefix[layer]
            shared_q = q.permute(1, 0, 2, 3).reshape(kv_heads, batch * rows, dim)
            head = torch.bmm(shared_q, pk.transpose(1, 2))
            head = head.view(kv_heads, batch, rows, prefix).permute(1, 0, 2, 3)
            scores = torch.cat([head, tail], dim=-1)
        else:
            scores = tail
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(self.dtype)
        tail_probs = probs[..., prefix:].reshape(batch * kv_heads, rows, cap)
        out = torch.bmm(tail_probs, tail_v.view(batch * kv_heads, cap, dim))
        out = out.view(batch, kv_heads, rows, dim)
        if prefix:
            head_probs = (
                probs[..., :prefix].permute(1, 0, 2, 3).reshape(kv_heads, batch * rows, prefix)
            )
            shared = torch.bmm(head_probs, pv).view(kv_heads, batch, rows, dim)
            out = out + shared.permute(1, 0, 2, 3)
        return out

    def _tail_bias(self, group: int, q_len: int, cap: int) -> Any:
        """The additive mask (0 or -inf) over every allocated tail position, shaped like the
        tails' scores ``(B*KV, G*q, cap)``; made on a pass's first layer, reused by the rest."""
        import torch

        key = (group, cap)
        if key in self._biases:
            return self._biases[key]
        batch = self.positions.shape[0]
        index = torch.arange(cap, device=self.device) + self.prefix_len
        visible = index[None, None, :] <= self.positions[:, :, None]  # (B, q, cap)
        bias = torch.zeros(visible.shape, dtype=self.dtype, device=self.device)
        bias.masked_fill_(~visible, float("-inf"))
        bias = bias[:, None, None].expand(batch, self.kv_heads, group, q_len, cap)
        bias = bias.reshape(batch * self.kv_heads, group * q_len, cap)
        self._biases[key] = bias
        return bias
