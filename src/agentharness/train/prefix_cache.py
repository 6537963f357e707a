"""A frozen model's keys and values of the prompts it has read, reused by prompts that start alike.

GRPO's KL term runs the reference model (the policy GRPO started from, never updated) over
every group's prompt and completions. Its keys and values of a prompt are the same every time
it reads that prompt: a curriculum plays each of its instances several times (v39: 13
instances over 48 steps), and every instance of a task starts with the same system prompt and
tool list (~700 of harmony-v5's ~1,400 prompt tokens at easy). :class:`PrefixCache` keeps what
the model computed for the prompts it read and computes, for a new prompt, only the part after
the longest start it shares with one of them. Only for a model that does not change: the
cache does not know when weights move.
"""

from __future__ import annotations

from typing import Any

# A shared start shorter than this is computed again: reusing it saves less than slicing costs.
MIN_REUSED_TOKENS = 16


def _bytes(kv: list[tuple[Any, Any]]) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)


def _common_length(a: Any, b: Any) -> int:
    """How many leading tokens two 1-D id tensors share."""
    n = min(a.numel(), b.numel())
    differ = (a[:n] != b[:n]).nonzero()
    return n if differ.numel() == 0 else int(differ[0, 0])


def plain_cache_tensors(cache: Any, length: int) -> list[tuple[Any, Any]] | None:
    """Each layer's ``(keys, values)`` of a plain ``DynamicCache`` holding ``length``
    positions; None for any other cache (sliding-window layers, none at all)."""
    from transformers.cache_utils import DynamicCache, DynamicLayer

    layers = getattr(cache, "layers", None)
    if (
        not isinstance(cache, DynamicCache)
        or not layers
        or any(type(layer) is not DynamicLayer for layer in layers)
        or cache.get_seq_length() != length
    ):
        return None
    return [(layer.keys, layer.values) for layer in layers]


class PrefixCache:
    """Per prompt, each layer's keys and values as a frozen model computed them.

    :meth:`keys_values` gives a prompt's keys and values, computing only the part after the
    longest start it shares (at least :data:`MIN_REUSED_TOKENS` tokens) with a prompt read
    before; the computed positions attend to the reused ones exactly as in a pass over the
    whole prompt (same positions, same causal attention), so the values are those of that
    pass up to float rounding. Prompts are kept least recently used first out, within
    ``limit_bytes``. ``reused_tokens`` and ``computed_tokens`` count what the calls reused and
    computed.
    """

    def __init__(self, limit_bytes: float) -> None:
        if not limit_bytes > 0:
            raise ValueError(f"limit_bytes is {limit_bytes}; give a positive size")
        self.limit_bytes = limit_bytes
        # (prompt ids, keys and values) per prompt, least recently used first
        self._entries: list[tuple[Any, list[tuple[Any, Any]]]] = []
        self.reused_tokens = 0
        self.computed_tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held_bytes(self) -> int:
        return sum(_bytes(kv) for _, kv in self._entries)

    def keys_values(self, backbone: Any, ids: Any) -> list[tuple[Any, Any]] | None:
        """Each layer's ``(keys, values)``, shaped ``(1, heads, len(ids), dim)``, of the 1-D
        prompt ``ids`` read by ``backbone`` (a decoder stack returning a plain
        ``DynamicCache``: ``use_cache=True``); None where its cache is any other kind.
        Call without gradients: the tensors are kept and shared between calls."""
        import torch
        from transformers.cache_utils import DynamicCache

        if torch.is_grad_enabled():
            raise RuntimeError("PrefixCache.keys_values runs without gradients (torch.no_grad())")
        ids = ids.reshape(-1)
        length = ids.numel()
        best, shared = -1, 0
        for i, (seen, _) in enumerate(self._entries):
            common = _common_length(seen, ids)
            if common > shared:
                best, shared = i, common
        if shared >= MIN_REUSED_TOKENS:
            entry = self._entries.pop(best)
            self._entries.append(entry)  # the most recently used now
            seen_kv = entry[1]
            if shared == length:  # this prompt, or a start of one read before
                self.reused_tokens += length
                return [(k[:, :, :length], v[:, :, :length]) for k, v in seen_kv]
            past: Any = DynamicCache(
                ddp_cache_data=[(k[:, :, :shared], v[:, :, :shared]) for k, v in seen_kv]
            )
        else:
            shared, past = 0, None
        out = backbone(
            input_ids=ids[None, shared:],
            attention_mask=torch.ones(1, length, dtype=torch.long, device=ids.device),
            past_key_values=past,
            use_cache=True,
        )
        kv = plain_cache_tensors(out.past_key_values, length)
        if kv is None:
            return None
        self.reused_tokens += shared
        self.computed_tokens += length - shared
        self._entries.append((ids.clone(), kv))
        while len(self._entries) > 1 and self.held_bytes > self.limit_bytes:
            self._entries.pop(0)
        if self.held_bytes > self.limit_bytes:
            self._entries.clear()  # one prompt larger than the limit: not kept
        return kv
