"""Batched decoding with a KV cache kept across turns: what GRPO rollouts and the ``local`` agent sample with.

A :class:`Decoder` holds a causal LM and a :class:`SlotCache`, one slot per conversation
in flight. A conversation's keys and values stay in its slot from turn to turn, so each
turn reads only what is new (the environment's reply, the next generation prompt), never
the history again. The slots' buffers are preallocated and grow by doubling, so a decoding
step writes one position per row instead of copying the whole cache (transformers'
``DynamicCache`` concatenates, which costs a copy of every layer's cache per token).

Each conversation has its own length: a row's keys are contiguous from position 0, a
decoding step writes each row's token at that row's own position, and a 4-D mask lets
each query see exactly its own row's past. Nothing is padded, so a row computes what it
would alone (the tests check the log-probabilities against one unbatched forward pass).

One forward pass reads the weights once for every row that decodes; a row that reads many
tokens at once (a prompt, a tool result) is fed alone, without padding the others.
:meth:`Decoder.extend` feeds several rows a few tokens each in one pass and returns the
logits after every one of them: what verifying drafted tokens needs (speculative
sampling, :mod:`agentharness.train.sampling`). The attention is grouped-query attention on
the cache's own heads (no copy of the keys per query head), by matrix products for feeds
of up to :data:`FEW_QUERIES` tokens and by ``scaled_dot_product_attention`` otherwise.

A plain Llama checkpoint (the bundled SmolLM2 among them) runs through
:class:`~agentharness.train.llama_forward.LlamaForward` instead of the model's own forward
(:data:`LLAMA_FORWARD`): fused projections, and a
:class:`~agentharness.train.llama_forward.BlockCache` in the model's dtype that keeps a
forked group's prompt once and each row's tail densely (1.3x per group on CPU,
``bench/decode_forward.py``). Any other model keeps its forward and a float32
:class:`SlotCache`.

``sampler(model, dtype)`` gives the model to sample with: the model itself in float32, or
a bfloat16 copy (about half the memory traffic per step; log-probabilities then differ
from the float32 model's by bfloat16 rounding: ``bench/RESULTS.md`` measures by how much).
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentharness.train import TrainInputError

if TYPE_CHECKING:
    from agentharness.train.llama_forward import BlockCache, LlamaForward

ATTENTION = "agentharness_slots"
# Feeds of at most this many tokens a row (a decoding step, a draft to verify) attend by
# matrix products over the cache's views; longer ones (a prompt, a tool reply) by SDPA.
FEW_QUERIES = 16
# Forward passes run under torch.inference_mode (False: under no_grad; bench/rollout_overheads.py
# times the two against each other).
INFERENCE_MODE = True
# Llama-family models decode through agentharness.train.llama_forward (fused products, no
# module dispatch, a cache in the model's dtype whose shared prefix and per-row tails
# are dense blocks) instead of their own forward (False: always their own forward;
# bench/decode_forward.py times the two against each other).
LLAMA_FORWARD = True
# A Llama pass's per-row cache grows in steps of this many positions: its attention runs
# over every allocated position (dense blocks), so the allocation is kept tight.
GROW = 64
_registered = False


def _register_attention() -> None:
    """Register :func:`_slot_attention` with transformers under :data:`ATTENTION` (once)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, _slot_attention)
    _registered = True


_shared = threading.local()  # the prefix the rows of the current decoding step share


def _slot_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """Attention over a slot cache: ``query`` (B, H, q, D), ``key``/``value`` (B, KV, L, D).

    ``attention_mask`` is the boolean (B, 1, q, L) mask :class:`Decoder` builds (True: may
    attend). Query heads share their key-value head (grouped-query attention) without the
    keys being copied once per query head. The cache is float32 (bfloat16 matrix products
    over strided cache views are slower on CPU than float32 ones), so a decoding step's
    attention is computed in float32 whatever the model's dtype; a read's (SDPA) in the
    model's dtype.

    In a pass of a few tokens per row whose rows all share their first ``P`` positions (a
    group forked from one prompt), those positions' keys and values are read once for all
    rows: the scores over the shared prefix come from one matrix product with every row's
    queries.
    """
    import torch
    import torch.nn.functional as F

    batch, heads, q_len, dim = query.shape
    kv_heads = key.shape[1]
    scale = scaling if scaling is not None else dim**-0.5
    dtype = query.dtype
    if q_len <= FEW_QUERIES and attention_mask is not None:
        # A decoding step or a short speculative feed: matrix products on the cache's own
        # strided views (no copy), each key-value head serving its group's queries at once.
        # The scale goes on the few queries and the mask is added inside the tail's product
        # (an additive bias made once per pass): scaling and masking the scores themselves
        # were elementwise passes over (rows x keys), most of a step's attention time.
        group = heads // kv_heads
        rows = group * q_len
        q = (query.to(key.dtype) * scale).reshape(batch, kv_heads, rows, dim)  # (B, KV, G*q, D)
        shared = min(getattr(_shared, "length", 0), key.shape[2])
        if batch == 1 or shared == 0:
            shared = 0
        length = key.shape[2]
        bias = _mask_bias(attention_mask, kv_heads, group, shared)  # (B*KV, G*q, L - P)
        tail = torch.baddbmm(
            bias,
            q.reshape(batch * kv_heads, rows, dim),
            key[:, :, shared:].reshape(batch * kv_heads, length - shared, dim).transpose(1, 2),
        ).view(batch, kv_heads, rows, length - shared)
        if shared:
            # (KV, B*G*q, D) @ (KV, D, P): the shared keys once, every row's queries at once;
            # every query sees the whole shared prefix, so it needs no mask
            qs = q.permute(1, 0, 2, 3).reshape(kv_heads, batch * rows, dim)
            head = torch.matmul(qs, key[0, :, :shared].transpose(-1, -2))
            head = head.view(kv_heads, batch, rows, shared).permute(1, 0, 2, 3)
            scores = torch.cat([head, tail], dim=-1)
        else:
            scores = tail
        probs = torch.softmax(scores, dim=-1)  # (B, KV, G*q, L)
        if shared:
            ps = probs[..., :shared].permute(1, 0, 2, 3).reshape(kv_heads, batch * rows, shared)
            out = torch.matmul(ps, value[0, :, :shared])
            out = out.view(kv_heads, batch, rows, dim).permute(1, 0, 2, 3)
            out = out + torch.matmul(probs[..., shared:], value[:, :, shared:])
        else:
            out = torch.matmul(probs, value)
        out = out.reshape(batch, heads, q_len, dim)
    else:
        # A read (a prompt, a tool reply) attends in the model's own dtype: CPU flash
        # attention runs ~2.8x faster in bfloat16 than in float32 here, and a bfloat16
        # model's keys and values are bfloat16 values, so casting them back loses nothing.
        out = F.scaled_dot_product_attention(
            query,
            key.to(dtype),
            value.to(dtype),
            attn_mask=attention_mask,
            dropout_p=0.0,
            is_causal=attention_mask is None and q_len > 1,
            scale=scale,
            enable_gqa=kv_heads != heads,
        )
    return out.to(dtype).transpose(1, 2).contiguous(), None


def _mask_bias(attention_mask: Any, kv_heads: int, group: int, shared: int) -> Any:
    """The additive mask (0 or -inf) of positions ``shared..L`` for every query head, shaped
    ``(B*KV, G*q, L - shared)`` like the tail's scores; made on a pass's first layer and
    reused by the others (the mask is the same object in every layer)."""
    import torch

    cache = getattr(_shared, "biases", None)
    key = (id(attention_mask), kv_heads, group, shared)
    if cache is not None and key in cache:
        return cache[key]
    batch, _, q_len, length = attention_mask.shape
    visible = attention_mask[:, :, :, shared:]  # (B, 1, q, L - P)
    bias = torch.zeros(visible.shape, dtype=torch.float32, device=visible.device)
    bias = bias.masked_fill_(~visible, float("-inf"))
    bias = bias[:, :, None].expand(batch, kv_heads, group, q_len, length - shared)
    bias = bias.reshape(batch * kv_heads, group * q_len, length - shared)
    if cache is not None:
        cache[key] = bias
    return bias


def regrow(cache: Any, shape: tuple[int, int, int, int], rows: int, keep: int) -> None:
    """Replace each layer's key and value buffer of ``cache`` (``SlotCache``, ``BlockCache``)
    by zeros of ``shape`` holding the old buffer's first ``rows`` slots and ``keep`` positions
    (the first call, with no buffers yet, appends them)."""
    import torch

    rows = min(rows, shape[0])
    for store in (cache.keys, cache.values):
        for i in range(cache.layers):
            fresh = torch.zeros(shape, dtype=cache.dtype, device=cache.device)
            if i < len(store):
                fresh[:rows, :, :keep] = store[i][:rows, :, :keep]
                store[i] = fresh
            else:
                store.append(fresh)


class SlotCache:
    """Per-layer key/value buffers of shape (slots, kv_heads, capacity, head_dim).

    The model calls :meth:`update` once per layer; what it writes and which rows it reads
    are set by :meth:`Decoder._forward` before each forward pass (``rows``: a contiguous
    range of slots; ``write_rows``/``write_pos``: where each new key goes).
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
        self.rows = slice(0, 0)
        self.kv_len = 0
        self.write_rows: Any = None
        self.write_pos: Any = None
        self.reserve(slots, 256)

    def reserve(self, slots: int, capacity: int) -> None:
        """Make room for ``slots`` rows of ``capacity`` positions (doubling, keeping the contents)."""
        if slots <= self.slots and capacity <= self.capacity:
            return
        new_slots = max(slots, 2 * self.slots) if slots > self.slots else self.slots
        new_cap = self.capacity or 256
        while new_cap < capacity:
            new_cap *= 2
        shape = (new_slots, self.kv_heads, new_cap, self.head_dim)
        regrow(self, shape, self.slots, self.capacity)
        self.slots, self.capacity = new_slots, new_cap

    def copy_slot(self, src: int, dst: int, length: int, start: int = 0) -> None:
        for store in (self.keys, self.values):
            for buf in store:
                buf[dst, :, start:length] = buf[src, :, start:length]

    # -- what transformers calls -----------------------------------------------------
    def update(
        self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any
    ) -> tuple[Any, Any]:
        k, v = self.keys[layer_idx], self.values[layer_idx]
        k[self.write_rows, :, self.write_pos] = key_states.transpose(1, 2).to(k.dtype)
        v[self.write_rows, :, self.write_pos] = value_states.transpose(1, 2).to(v.dtype)
        return k[self.rows, :, : self.kv_len], v[self.rows, :, : self.kv_len]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.kv_len

    def __len__(self) -> int:
        return self.layers


@dataclass
class _Seq:
    slot: int
    length: int = 0
    family: int = -1  # the sequence it was forked from (-1: none)
    shared: int = 0  # how many first positions it shares with its family
    offset: int = 0  # how many first positions the cache holds in its shared prefix


class Decoder:
    """Conversations decoded together by one model, each with its KV cache kept across turns.

    Sequences are opened (:meth:`open`, :meth:`fork`), fed tokens (:meth:`step`), rolled back
    (:meth:`crop`) and closed (:meth:`close`). Slots stay contiguous: closing a sequence moves
    the last slot into the hole, so a decoding step reads one contiguous block of the cache.
    """

    def __init__(self, model: Any, slots: int = 1) -> None:
        import torch

        _register_attention()
        self.model = model
        config = (
            model.config.get_text_config()
            if hasattr(model.config, "get_text_config")
            else model.config
        )
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        param = next(model.parameters())
        self.device = param.device
        self._llama: LlamaForward | None = None
        if LLAMA_FORWARD:
            from agentharness.train.llama_forward import LlamaForward

            self._llama = LlamaForward.build(model)
        shape = (config.num_hidden_layers, kv_heads, head_dim)
        first_slots = min(max(1, slots), 16)  # room for more is made as sequences open
        self.cache: SlotCache | BlockCache
        if self._llama is not None:
            from agentharness.train.llama_forward import BlockCache

            self.cache = BlockCache(*shape, param.dtype, param.device, first_slots)
        else:
            self.cache = SlotCache(*shape, torch.float32, param.device, first_slots)
        self._torch = torch
        self._swap = AttentionSwap(model)
        self.seqs: dict[int, _Seq] = {}
        self._by_slot: list[int] = []  # sequence id in each used slot
        self._next_id = 0
        self.forward_passes = 0
        # Where the time goes: [passes, tokens read, seconds] of decoding steps and of reads.
        self.stats: dict[str, list[float]] = {"decode": [0, 0, 0.0], "read": [0, 0, 0.0]}

    # -- sequences -----------------------------------------------------------------------
    def open(self) -> int:
        """A new, empty sequence (open every sequence before forking one, see :meth:`fork`)."""
        if self._prefix_len():
            raise ValueError(
                "a decoder whose sequences were forked from a shared prefix opens no new "
                "sequence: open them all before forking, or use another Decoder"
            )
        return self._open()

    def _prefix_len(self) -> int:
        return getattr(self.cache, "prefix_len", 0)

    def _open(self) -> int:
        slot = len(self._by_slot)
        self.cache.reserve(slot + 1, self.cache.capacity)
        sid = self._next_id
        self._next_id += 1
        self.seqs[sid] = _Seq(slot)
        self._by_slot.append(sid)
        return sid

    def fork(self, sid: int, n: int) -> list[int]:
        """``n - 1`` copies of sequence ``sid``: ``[sid, copies...]``.

        With the Llama pass, forking the only open sequence makes its positions the
        cache's shared prefix, stored once; otherwise each copy gets a copy of its cache.
        """
        src = self.seqs[sid]
        cache = self.cache
        if not isinstance(cache, SlotCache) and not cache.prefix_len and len(self.seqs) == 1:
            cache.make_prefix(src.slot, src.length)
            src.offset = src.length
        out = [sid]
        for _ in range(n - 1):
            new = self._open()
            copy = self.seqs[new]
            self.cache.copy_slot(src.slot, copy.slot, src.length - src.offset)
            copy.length, copy.offset = src.length, src.offset
            copy.family, copy.shared = sid, src.length
            out.append(new)
        src.family, src.shared = sid, src.length
        return out

    def copy(self, src: int, dst: int, length: int) -> None:
        """Give ``dst`` the first ``length`` positions of ``src`` (``dst``'s own first positions
        must already equal ``src``'s): a conversation that has read exactly what another one
        read takes its keys and values instead of computing them again."""
        source, target = self.seqs[src], self.seqs[dst]
        if not target.length <= length <= source.length:
            raise ValueError(
                f"cannot copy {length} positions from a sequence of {source.length} "
                f"into one of {target.length}"
            )
        if source.offset != target.offset:
            raise ValueError("cannot copy between sequences with different shared prefixes")
        off = source.offset
        self.cache.copy_slot(source.slot, target.slot, length - off, start=target.length - off)
        target.length = length

    def load(self, sid: int, keys_values: list[tuple[Any, Any]]) -> None:
        """Give the empty sequence ``sid`` the keys and values of its first tokens, computed
        elsewhere: per layer ``(keys, values)`` shaped ``(1, kv_heads, length, head_dim)``, as a
        transformers ``DynamicCache`` holds them (keys after the rotary embedding) for
        positions ``0..length-1``. Feeding ``sid`` then goes on from position ``length``."""
        seq = self.seqs[sid]
        cache = self.cache
        if seq.length or seq.offset:
            raise ValueError("load keys and values into an empty sequence only")
        if len(keys_values) != cache.layers:
            raise ValueError(f"{len(keys_values)} layers of keys and values for {cache.layers}")
        length = int(keys_values[0][0].shape[-2])
        cache.reserve(len(self._by_slot), length + 1)
        for layer, (keys, values) in enumerate(keys_values):
            cache.keys[layer][seq.slot, :, :length] = keys[0].to(cache.dtype)
            cache.values[layer][seq.slot, :, :length] = values[0].to(cache.dtype)
        seq.length = length

    def close(self, sid: int) -> None:
        """Free a sequence's slot (the last slot moves into it)."""
        seq = self.seqs.pop(sid)
        last = len(self._by_slot) - 1
        if seq.slot != last:
            moved = self._by_slot[last]
            kept = self.seqs[moved]
            self.cache.copy_slot(last, seq.slot, kept.length - kept.offset)
            kept.slot = seq.slot
            self._by_slot[seq.slot] = moved
        self._by_slot.pop()
        if not isinstance(self.cache, SlotCache):
            self.cache.shrink(max((q.length - q.offset for q in self.seqs.values()), default=0))

    def length(self, sid: int) -> int:
        return self.seqs[sid].length

    def crop(self, sid: int, length: int) -> None:
        """Forget the tokens of ``sid`` after the first ``length``."""
        seq = self.seqs[sid]
        if not seq.offset <= length <= seq.length:
            raise ValueError(
                f"cannot crop a sequence of {seq.length} tokens to {length}"
                + (f" (its first {seq.offset} are a shared prefix)" if seq.offset else "")
            )
        seq.length = length
        seq.shared = min(seq.shared, length)

    # -- feeding -------------------------------------------------------------------------
    def step(self, feeds: dict[int, list[int]]) -> dict[int, Any]:
        """Read each sequence's new tokens; the float32 logits after each one's last token.

        Sequences fed one token are decoded in one forward pass; a sequence fed several is
        read in a pass of its own (no row is padded to the longest).
        """
        out: dict[int, Any] = {}
        single = {sid: ids for sid, ids in feeds.items() if len(ids) == 1}
        for sid, ids in feeds.items():
            if len(ids) > 1:
                out.update(self._forward([self.seqs[sid].slot], {sid: ids}))
            elif not ids:
                raise ValueError("a sequence was fed no tokens")
        if single:
            out.update(self._forward(self._pass_slots(single), single))
        return out

    def _pass_slots(self, feeds: dict[int, list[int]]) -> list[int]:
        """The slots a pass feeding ``feeds`` runs over: just theirs with the Llama pass
        (whose decoding steps attend over runs of adjacent slots in place), else the block
        from the first to the last (rows between them read dummy tokens)."""
        slots = sorted(self.seqs[sid].slot for sid in feeds)
        if self._llama is not None or len(slots) == 1:
            return slots
        return list(range(slots[0], slots[-1] + 1))

    def extend(self, feeds: dict[int, list[int]]) -> dict[int, Any]:
        """Read each sequence's few new tokens in one pass; the float32 logits after each.

        Returns ``(len(feeds[sid]), vocab)`` logits per sequence: row ``i`` is the
        distribution of the token after ``feeds[sid][i]``. Rows are padded to the longest
        feed with tokens written past their end (never attended to by their real tokens);
        a sequence's length grows by its own feed only. What is not kept is dropped with
        :meth:`crop`.
        """
        if any(not ids for ids in feeds.values()):
            raise ValueError("a sequence was fed no tokens")
        return self._forward(self._pass_slots(feeds), feeds, every_position=True)

    def _forward(
        self, slots: list[int], feeds: dict[int, list[int]], every_position: bool = False
    ) -> dict[int, Any]:
        """One forward pass over ``slots`` (ascending); rows not in ``feeds``, and feeds shorter
        than the longest, read dummy tokens written past their end (overwritten later, never
        attended to by their real tokens). Returns each fed row's logits after its last
        token, or after every token of its feed with ``every_position``."""
        torch = self._torch
        width = max(len(ids) for ids in feeds.values())
        if not every_position and len({len(ids) for ids in feeds.values()}) > 1:
            raise ValueError("feeds of different lengths need every_position (Decoder.extend)")
        ids_rows, pos_rows, starts = [], [], []
        for slot in slots:
            sid = self._by_slot[slot]
            start = self.seqs[sid].length
            new = feeds.get(sid, [])
            ids_rows.append(new + [0] * (width - len(new)))
            pos_rows.append(list(range(start, start + width)))
            starts.append(start)
        dev = self.device
        positions = torch.tensor(pos_rows, device=dev)
        input_ids = torch.tensor(ids_rows, device=dev)
        keep = width if every_position else 1
        run = self._llama_pass if self._llama is not None else self._model_pass
        logits, seconds = run(slots, input_ids, positions, max(starts) + width, keep)
        self.forward_passes += 1
        stat = self.stats["decode" if width == 1 or every_position else "read"]
        stat[0] += 1
        stat[1] += sum(len(ids) for ids in feeds.values())
        stat[2] += seconds
        result = {}
        for row_index, slot in enumerate(slots):
            sid = self._by_slot[slot]
            if sid in feeds:
                fed = len(feeds[sid])
                self.seqs[sid].length += fed
                row = logits[row_index]
                result[sid] = row[:fed] if every_position else row[-1]
        return result

    def _llama_pass(
        self, slots: list[int], input_ids: Any, positions: Any, kv_len: int, keep: int
    ) -> tuple[Any, float]:
        """The pass through :class:`LlamaForward`: float32 logits and the seconds it took."""
        torch = self._torch
        assert self._llama is not None and not isinstance(self.cache, SlotCache)
        offsets = {self.seqs[self._by_slot[slot]].offset for slot in slots}
        if len(offsets) != 1:  # open() after a fork is refused, so never expected
            raise RuntimeError("rows of one pass hold different shared prefixes")
        offset = offsets.pop()
        cache = self.cache
        cache.reserve(cache.slots, kv_len - offset)
        cache.begin(slots, positions - offset, positions, kv_len - offset)
        t0 = time.perf_counter()
        with torch.inference_mode() if INFERENCE_MODE else torch.no_grad():
            logits = self._llama(input_ids, positions, cache, keep).float()
        return logits, time.perf_counter() - t0

    def _model_pass(
        self, slots: list[int], input_ids: Any, positions: Any, kv_len: int, keep: int
    ) -> tuple[Any, float]:
        """The pass through the model's own forward with :func:`_slot_attention` (over a
        block of adjacent slots, :meth:`_pass_slots`)."""
        torch = self._torch
        lo, hi = slots[0], slots[-1] + 1
        dev = self.device
        width = positions.shape[1]
        cache = self.cache
        assert isinstance(cache, SlotCache)
        cache.reserve(cache.slots, kv_len)
        cache.rows = slice(lo, hi)
        cache.kv_len = kv_len
        cache.write_rows = torch.arange(lo, hi, device=dev)[:, None].expand(-1, width)
        cache.write_pos = positions
        rows = [self.seqs[self._by_slot[slot]] for slot in range(lo, hi)]
        same = len({r.family for r in rows}) == 1 and rows[0].family >= 0
        _shared.length = min(r.shared for r in rows) if same and width <= FEW_QUERIES else 0
        _shared.biases = {}
        keys = torch.arange(kv_len, device=dev)
        mask = keys[None, None, None, :] <= positions[:, None, :, None]  # (B, 1, q, L)
        t0 = time.perf_counter()
        # inference_mode, not just no_grad: no version counters or view tracking per op, and
        # a decoding step is ~1,000 small ops (bench/RESULTS.md, "Two rollout overheads")
        try:
            with torch.inference_mode() if INFERENCE_MODE else torch.no_grad(), self._swap:
                out = self.model(
                    input_ids=input_ids,
                    attention_mask=mask,
                    position_ids=positions,
                    past_key_values=cache,
                    use_cache=True,
                    logits_to_keep=keep,
                )
        finally:
            _shared.length = 0
            _shared.biases = None
        return out.logits.float(), time.perf_counter() - t0


def sampler(model: Any, dtype: str = "float32", reuse: Any = None) -> Any:
    """The model to sample with: ``model`` itself (float32) or a bfloat16 copy of it
    (``auto``: the copy where this machine has fast bfloat16 matrix products).

    The copy always has ``model``'s current weights. ``reuse``, a copy an earlier call made
    of this same model, is refreshed in place (its weights overwritten) instead of copying
    the model again (0.04 s instead of 0.12 s for SmolLM2-135M here, bench/RESULTS.md; no
    new 270 MB allocation per group). A LoRA-wrapped (peft) model is merged into a fresh
    copy every time.
    """
    import torch

    if dtype == "auto":
        from agentharness.train.model import resolve_dtype

        dtype = resolve_dtype(dtype)
    if dtype in ("float32", "fp32"):
        return model
    if dtype not in ("bfloat16", "bf16"):
        raise TrainInputError(f"unknown sampling dtype {dtype!r}; choose auto, float32 or bfloat16")
    if reuse is not None and not hasattr(model, "merge_and_unload"):
        with torch.no_grad():
            for copied, current in zip(reuse.parameters(), model.parameters(), strict=True):
                copied.copy_(current)
        return reuse
    clone = copy.deepcopy(model)
    if hasattr(clone, "merge_and_unload"):
        clone = clone.merge_and_unload()
    # A forward patched on the instance (TRL's fused LM head, accelerate's autocast wrapper)
    # closes over the original model: deep-copied, it would still run that float32 model.
    for module in clone.modules():
        if "_hf_hook" not in vars(module):  # accelerate's device-placement hooks stay
            vars(module).pop("forward", None)
            vars(module).pop("_original_forward", None)
    clone = clone.to(torch.bfloat16)
    clone.eval()
    for p in clone.parameters():
        p.requires_grad_(False)
    return clone


class AttentionSwap:
    """Context manager: the model's attention is :data:`ATTENTION` inside, as before outside."""

    def __init__(self, model: Any) -> None:
        self.configs = _configs(model)
        self.saved: list[Any] = []

    def __enter__(self) -> AttentionSwap:
        _register_attention()
        self.saved = [c._attn_implementation for c in self.configs]
        for c in self.configs:
            c._attn_implementation = ATTENTION
        return self

    def __exit__(self, *exc: object) -> None:
        for c, old in zip(self.configs, self.saved, strict=True):
            c._attn_implementation = old


def _configs(model: Any) -> list[Any]:
    """Every distinct config object the model's modules read their attention from."""
    seen: dict[int, Any] = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_attn_implementation"):
            seen.setdefault(id(config), config)
    return list(seen.values())
