"""Drawing tokens: one at a time, or several at once by verifying drafted ones.

:func:`sample_token` draws one token from a row of logits at a temperature and top-p.

Speculative sampling with drafts looked up in the conversation itself ("prompt lookup"):
an agent's turn copies a lot from what it has read — joint angles from the last tool
reply, a tool call's JSON frame, the phrasing of its previous turn. :class:`NgramDrafter`
proposes the tokens that followed the most recent earlier occurrence of the sequence's
last few tokens; the model reads the drawn token and the draft in one pass
(:meth:`~agentharness.train.decode.Decoder.extend`), and :func:`accept_drafts` keeps a
drafted token ``d`` with probability ``p(d)`` under the model's sampling distribution and,
at the first refusal, draws from ``p`` without ``d`` (renormalised). That is speculative
sampling (Leviathan et al. 2023; Chen et al. 2023) with a draft distribution that puts all
its mass on ``d``, so every token is distributed exactly as one-at-a-time sampling would
draw it, and each token's recorded log-probability is ``log p(token)``; at temperature 0 a
draft is kept when it is the argmax, which gives greedy decoding's tokens. A pass reads
the weights once for up to ``k + 1`` tokens a row, which on a CPU costs little more than
a one-token step (bench/RESULTS.md measures the rollouts with and without drafts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def policy_logprobs(logits: Any, temperature: float, top_p: float) -> Any:
    """Log-probabilities of the sampling distribution over one row of logits (float32):
    temperature, then top-p (the smallest set of tokens whose mass reaches ``top_p``)."""
    import torch

    logp = torch.log_softmax(logits / temperature, -1)
    if top_p < 1.0:
        sorted_logp, order = torch.sort(logp, descending=True)
        cumulative = torch.cumsum(sorted_logp.exp(), -1)
        drop = cumulative - sorted_logp.exp() >= top_p  # keeps the smallest set reaching top_p
        logp = logp.clone()
        logp[order[drop]] = float("-inf")
        logp = torch.log_softmax(logp, -1)
    return logp


def draw(logp: Any, generator: Any) -> int:
    """A token drawn from log-probabilities ``logp`` (entries of -inf are never drawn).

    Inverse CDF: one cumulative sum and a binary search, ~10x faster than
    ``torch.multinomial`` over a 49k vocabulary on this CPU (bench/RESULTS.md). A token of
    probability 0 is never drawn: its cumulative value equals its predecessor's, so no ``u``
    falls in its interval.
    """
    import torch

    cumulative = torch.cumsum(logp.exp(), -1)
    u = torch.rand((), generator=generator) * cumulative[-1]
    token = int(torch.searchsorted(cumulative, u, right=True))
    if token == cumulative.numel():  # u rounded up to the total: the last token that has mass
        token = int(torch.searchsorted(cumulative, cumulative[-1]))
    return token


def sample_token(
    logits: Any, temperature: float, top_p: float, generator: Any
) -> tuple[int, float]:
    """A token from ``logits`` (float32, one row) and its log-probability under the sampling
    distribution (temperature and top-p applied); greedy when ``temperature <= 0``."""
    import torch

    if temperature <= 0:
        logp = torch.log_softmax(logits, -1)
        token = int(torch.argmax(logits))
        return token, float(logp[token])
    logp = policy_logprobs(logits, temperature, top_p)
    token = draw(logp, generator)
    return token, float(logp[token])


@dataclass
class Verdict:
    """What :func:`accept_drafts` kept.

    ``tokens`` are the accepted drafts, then the token drawn at the first refusal if there
    was one; ``logprobs`` their log-probabilities under the sampling distribution. The model
    has read the first ``read`` of them (the accepted drafts), not a refusal's token.
    ``next_logits`` is the distribution after the last draft when every draft was kept.
    """

    tokens: list[int]
    logprobs: list[float]
    read: int
    next_logits: Any = None  # every draft kept: the distribution after the last one


def accept_drafts(
    logits: Any, draft: list[int], temperature: float, top_p: float, generator: Any
) -> Verdict:
    """Speculative sampling of ``draft`` against the model's ``logits`` for it.

    ``logits`` is ``(len(draft) + 1, vocab)``: row ``i`` is the distribution of the token in
    ``draft[i]``'s place (row 0 follows the token fed before the draft), the last row the
    one after the whole draft. Each draft token ``d`` is kept with probability ``p(d)``
    (greedy: when it is the argmax); at the first refusal a token is drawn from ``p`` with
    ``d`` removed and the rest of the draft is dropped.
    """
    import torch

    tokens: list[int] = []
    logprobs: list[float] = []
    for i, d in enumerate(draft):
        if temperature <= 0:
            logp = torch.log_softmax(logits[i], -1)
            best = int(torch.argmax(logits[i]))
            tokens.append(best)
            logprobs.append(float(logp[best]))
            if best != d:
                return Verdict(tokens, logprobs, read=i)
            continue
        logp = policy_logprobs(logits[i], temperature, top_p)
        p = float(logp[d].exp())
        if float(torch.rand((), generator=generator)) < p:
            tokens.append(d)
            logprobs.append(float(logp[d]))
            continue
        rest = logp.clone()
        rest[d] = float("-inf")  # p without d; draw renormalises (the cumulative sum's total)
        token = draw(rest, generator)
        tokens.append(token)
        logprobs.append(float(logp[token]))
        return Verdict(tokens, logprobs, read=i)
    return Verdict(tokens, logprobs, read=len(draft), next_logits=logits[len(draft)])


class NgramDrafter:
    """Drafts the continuation of a token sequence from its own earlier text.

    Keeps, for every ``n``-gram (``min_n <= n <= max_n``) of the sequence, where its most
    recent occurrence ended; :meth:`propose` finds the longest suffix of the sequence seen
    before and returns up to ``k`` tokens that followed it then.
    """

    def __init__(self, max_n: int = 4, min_n: int = 2) -> None:
        self.max_n, self.min_n = max_n, min_n
        self.tokens: list[int] = []
        self.last_end: dict[tuple[int, ...], int] = {}  # n-gram -> end of its latest occurrence
        self.previous_end: dict[tuple[int, ...], int] = {}  # ... and of the one before it

    def copy(self) -> NgramDrafter:
        other = NgramDrafter(self.max_n, self.min_n)
        other.tokens = list(self.tokens)
        other.last_end = dict(self.last_end)
        other.previous_end = dict(self.previous_end)
        return other

    def extend(self, tokens: list[int]) -> None:
        for token in tokens:
            self.tokens.append(token)
            end = len(self.tokens)
            for n in range(self.min_n, self.max_n + 1):
                if end < n:
                    break
                gram = tuple(self.tokens[end - n : end])
                seen = self.last_end.get(gram)
                if seen is not None:
                    self.previous_end[gram] = seen
                self.last_end[gram] = end

    def propose(self, k: int) -> list[int]:
        """Up to ``k`` tokens that followed the latest earlier occurrence of the sequence's
        longest known suffix (``[]`` when none of its suffixes occurred before)."""
        end = len(self.tokens)
        if k <= 0:
            return []
        for n in range(self.max_n, self.min_n - 1, -1):
            if end < n:
                continue
            gram = tuple(self.tokens[end - n : end])
            # The suffix itself is the latest occurrence; the one before it is the match.
            earlier = self.previous_end.get(gram)
            if earlier is not None:
                return self.tokens[earlier : earlier + k]
        return []
