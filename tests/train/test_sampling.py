"""Drawing tokens: drafts looked up in the conversation, and their speculative acceptance,
which must leave every token distributed as one-at-a-time sampling draws it."""

from __future__ import annotations

import pytest

from agentharness.train.sampling import NgramDrafter, accept_drafts, policy_logprobs

torch = pytest.importorskip("torch", reason="needs the 'local' extra")


def test_the_drafter_proposes_what_followed_the_latest_earlier_occurrence() -> None:
    drafter = NgramDrafter(max_n=3, min_n=2)
    drafter.extend([1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 6, 2, 3])
    # [2, 3] occurred twice before; the latest (followed by 7, 8) wins
    assert drafter.propose(2) == [7, 8]
    assert drafter.propose(0) == []
    drafter.extend([4])  # [2, 3, 4]: the longest suffix seen before is three tokens long
    assert drafter.propose(3) == [5, 9, 2]
    drafter.extend([42])  # [4, 42] never occurred
    assert drafter.propose(3) == []
    copy = drafter.copy()
    copy.extend([1, 2])
    assert copy.propose(2) == [3, 4] and drafter.tokens[-1] == 42  # the copy is independent


def test_drafts_near_the_end_propose_what_is_there() -> None:
    drafter = NgramDrafter()
    drafter.extend([5, 6, 5, 6])  # the match ends where the suffix starts
    assert drafter.propose(4) == [5, 6]


def frequencies(samples: list[tuple[int, ...]], position: int, vocab: int) -> list[float]:
    counts = [0] * vocab
    for s in samples:
        counts[s[position]] += 1
    return [c / len(samples) for c in counts]


@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 1.0), (1.0, 0.8)])
def test_accepted_drafts_follow_the_model_distribution(temperature: float, top_p: float) -> None:
    """The first token, and the second given that the first was the draft's, have the model's
    sampling distribution whatever the draft, and each carries its log-probability."""
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0, 0.0], [0.0, 1.5, -0.5, 0.3, 1.0], [1.0] * 5])
    p0 = policy_logprobs(logits[0], temperature, top_p).exp().tolist()
    p1 = policy_logprobs(logits[1], temperature, top_p).exp().tolist()
    generator = torch.Generator().manual_seed(0)
    for draft in ([0, 1], [3, 4]):  # a likely draft and an unlikely one
        samples = []
        for _ in range(8000):
            verdict = accept_drafts(logits, draft, temperature, top_p, generator)
            for i, token in enumerate(verdict.tokens):
                expected = policy_logprobs(logits[i], temperature, top_p)[token]
                assert verdict.logprobs[i] == pytest.approx(float(expected))
            leading = 0  # a refusal's token is never the refused draft token
            while leading < len(verdict.tokens) and verdict.tokens[leading] == draft[leading]:
                leading += 1
            assert verdict.read == leading
            samples.append(tuple(verdict.tokens))
        first = frequencies(samples, 0, 5)
        assert first == pytest.approx(p0, abs=0.02)
        kept = [s for s in samples if s[0] == draft[0] and len(s) > 1]
        if len(kept) > 2000:
            assert frequencies(kept, 1, 5) == pytest.approx(p1, abs=0.03)
        if top_p < 1.0:
            assert all(p0[s[0]] > 0 for s in samples)  # never a token top-p removed


def test_a_draft_kept_whole_hands_on_the_next_distribution() -> None:
    logits = torch.tensor([[0.0, 30.0, 0.0], [30.0, 0.0, 0.0], [0.5, 0.2, 0.1]])
    verdict = accept_drafts(logits, [1, 0], 1.0, 1.0, torch.Generator().manual_seed(1))
    assert verdict.tokens == [1, 0] and verdict.read == 2
    assert torch.equal(verdict.next_logits, logits[2])


def test_greedy_keeps_a_draft_only_while_it_is_the_argmax() -> None:
    logits = torch.tensor([[0.0, 3.0, 1.0], [2.0, 0.0, 1.0], [0.0, 0.0, 5.0]])
    verdict = accept_drafts(logits, [1, 2], 0.0, 1.0, None)
    assert verdict.tokens == [1, 0] and verdict.read == 1 and verdict.next_logits is None
    logp = torch.log_softmax(logits[1], -1)
    assert verdict.logprobs[1] == pytest.approx(float(logp[0]))
