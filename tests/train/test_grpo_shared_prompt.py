"""The GRPO training pass that computes a group's shared prompt once, on a tiny random model.

``SharedPromptGRPOTrainer`` runs the prompt once and every completion on top of its KV
cache; TRL's own pass runs each row's prompt + completion. Their per-token log-probabilities,
entropies and gradients must agree (float32), with right-padded completions of different
lengths, an empty one and left-padded prompts; rows that share no prompt take TRL's pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the 'train' extra")

import torch
from tiny_lm import tiny_model, tiny_tokenizer

from agentharness.store.run import RunDir
from agentharness.train.grpo import shared_prompt_logps, shared_prompt_trainer_class


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: splitting them only stalls on a busy box
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def make_trainer(tmp_path: Path, group: int = 4, **config: Any) -> Any:
    """A ``SharedPromptGRPOTrainer`` over a tiny random Llama (GQA: 4 query, 2 KV heads)."""
    from datasets import Dataset
    from trl import GRPOConfig

    tok = tiny_tokenizer()
    net = tiny_model(tok).train()
    args = GRPOConfig(
        output_dir=str(tmp_path / "trainer"),
        per_device_train_batch_size=group,
        num_generations=group,
        temperature=0.7,  # the log-probabilities are of the temperature-scaled distribution
        use_cpu=True,
        report_to=[],
        # TRL's defaults are True for both; train_grpo sets them as here (bf16 if asked).
        **{"gradient_checkpointing": False, "bf16": False, **config},
    )
    return shared_prompt_trainer_class()(
        model=net,
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "hello"}] * group),
        processing_class=tok,
    )


def batch(
    prompts: list[list[int]], completions: list[list[int]], pad: int = 0
) -> tuple[Any, Any, int]:
    """TRL's layout: prompts left-padded, completions right-padded, ``cat`` of both."""
    p = max(len(x) for x in prompts)
    c = max(len(x) for x in completions)
    ids, mask = [], []
    for prompt, completion in zip(prompts, completions, strict=True):
        left, right = p - len(prompt), c - len(completion)
        ids.append([pad] * left + prompt + completion + [pad] * right)
        mask.append([0] * left + [1] * (len(prompt) + len(completion)) + [0] * right)
    return torch.tensor(ids), torch.tensor(mask), c


VOCAB = len(tiny_tokenizer())


def random_ids(n: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, VOCAB, (n,), generator=g).tolist()


def logps_and_grads(trainer: Any, ids: Any, mask: Any, keep: int) -> tuple[Any, Any, dict]:
    """Log-probs, entropies and the gradients of a fixed random function of both."""
    model = trainer.model
    model.zero_grad()
    logps, entropies, _ = trainer._get_per_token_logps_and_entropies(
        model, ids, mask, keep, compute_entropy=True
    )
    weights = torch.randn(logps.shape, generator=torch.Generator().manual_seed(1))
    ((logps * weights).sum() + 0.3 * (entropies * weights).sum()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logps.detach(), entropies.detach(), grads


def assert_same(shared: tuple[Any, Any, dict], plain: tuple[Any, Any, dict]) -> None:
    torch.testing.assert_close(shared[0], plain[0], atol=1e-5, rtol=1e-5)
    # The tiny model's logits are sharpened to ~±100: an entropy (a difference of two such
    # sums) carries float32 rounding of a few 1e-5 either way.
    torch.testing.assert_close(shared[1], plain[1], atol=5e-5, rtol=1e-5)
    assert shared[2].keys() == plain[2].keys() and plain[2]
    for name, grad in plain[2].items():
        scale = float(grad.abs().max()) or 1.0
        torch.testing.assert_close(shared[2][name] / scale, grad / scale, atol=1e-5, rtol=0)


def tree_and_plain_passes(
    trainer: Any, ids: Any, mask: Any, keep: int, score: Any, **options: Any
) -> tuple[tuple[Any, Any, dict], tuple[Any, Any, dict], dict[str, int]]:
    """The prefix-tree pass (``shared_prompt_logps`` with ``score`` as its loss mask) and
    TRL's per-row pass, each with the gradients of one fixed random function of its
    log-probabilities and entropies over the scored positions; and the tree pass's counters."""
    rows = ids.shape[0]
    weights = torch.randn(rows, keep, generator=torch.Generator().manual_seed(1))

    def gradients(logps: Any, entropies: Any) -> tuple[Any, Any, dict]:
        loss = (logps + 0.3 * entropies) * weights
        (loss if score is None else loss * score).sum().backward()
        model = trainer.model
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        return logps.detach(), entropies.detach(), grads

    stats: dict[str, int] = {}
    trainer.model.zero_grad()
    tree = shared_prompt_logps(
        trainer.model, ids, mask, keep, compute_entropy=True, stats=stats,
        temperature=trainer.temperature, score_mask=score, **options,
    )  # fmt: skip
    shared = gradients(*tree)
    trainer.model.zero_grad()
    trainer.shared_prompt = False
    logps, entropies, _ = trainer._get_per_token_logps_and_entropies(
        trainer.model, ids, mask, keep, compute_entropy=True
    )
    trainer.shared_prompt = True
    return shared, gradients(logps, entropies), stats


def assert_same_where_scored(
    shared: tuple[Any, Any, dict], plain: tuple[Any, Any, dict], real: Any, score: Any
) -> None:
    """Equal log-probabilities and entropies at the real (unpadded) scored positions, zero
    log-probabilities at the unscored ones, and equal gradients."""
    if score is not None:
        assert torch.all(shared[0][~score] == 0)
        real = real & score
    assert_same(
        (shared[0][real], shared[1][real], shared[2]), (plain[0][real], plain[1][real], plain[2])
    )


def test_shared_prompt_equals_the_per_row_pass(tmp_path: Path) -> None:
    from agentharness.train import grpo

    trainer = make_trainer(tmp_path)
    assert type(trainer) is grpo.SharedPromptGRPOTrainer
    prompt = random_ids(40, seed=0)
    completions = [random_ids(n, seed=10 + n) for n in (17, 5, 11, 1)]
    ids, mask, keep = batch([prompt] * 4, completions)
    shared = logps_and_grads(trainer, ids, mask, keep)
    assert trainer.prompt_sharing.pop("kept_activation_bytes") > 0  # with gradients
    assert trainer.prompt_sharing == {
        "shared_calls": 1,
        "fallback_calls": 0,
        "prompt_passes": 1,
        "rows": 4,
        "row_tokens": 34,
        "scored_tokens": 34,  # no loss mask here: every position
        "shared_completion_tokens": 0,  # random completions: no common first tokens
        "recomputed_tokens": 0,  # every episode's activations fit in the memory budget
        "skipped_flat_batches": 0,
    }
    trainer.shared_prompt = False
    plain = logps_and_grads(trainer, ids, mask, keep)
    assert trainer.prompt_sharing["fallback_calls"] == 1
    assert_same(shared, plain)
    # Padding scores zero, as in TRL's pass; the real tokens do not.
    assert torch.all(shared[0][1, 5:] == 0) and torch.all(shared[0][1, :5] != 0)


@pytest.mark.parametrize("masked", [False, True])
def test_common_first_completion_tokens_are_computed_once(
    tmp_path: Path, masked: bool, monkeypatch: Any
) -> None:
    """Completions that open alike (the same first turn and reply) share that part:
    computed once, its log-probabilities reused by every row, and the log-probabilities,
    entropies and gradients still those of TRL's per-row pass."""
    from agentharness.train import grpo

    monkeypatch.setattr(grpo, "MIN_SHARED_TOKENS", 1)
    trainer = make_trainer(tmp_path)
    prompt = random_ids(30, seed=0)
    opening = random_ids(9, seed=5)
    tails = [random_ids(n, seed=40 + n) for n in (7, 1, 12, 4)]
    completions = [opening + tail for tail in tails]
    ids, mask, keep = batch([prompt] * 4, completions)
    score = None
    if masked:  # the opening's model tokens and environment tokens alike in every row
        score = torch.rand(4, keep, generator=torch.Generator().manual_seed(3)) < 0.6
        score[:, :9] = score[0, :9]
        score[1, 9:] = False  # a row whose own tokens are all the environment's
    shared, plain, stats = tree_and_plain_passes(trainer, ids, mask, keep, score)
    assert stats["shared_completion_tokens"] == 9
    assert stats["row_tokens"] == sum(len(t) for t in tails) - (1 if masked else 0)
    assert_same_where_scored(shared, plain, mask[:, -keep:].bool(), score)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize(("checkpointed", "min_shared"), [(True, 1), (False, 1), (True, 6)])
def test_every_common_prefix_is_computed_once(
    tmp_path: Path, masked: bool, checkpointed: bool, min_shared: int, monkeypatch: Any
) -> None:
    """Completions that branch (episodes agreeing for a few turns, then not) are a prefix
    tree: each shared stretch is computed once, and log-probabilities, entropies and
    gradients are still those of TRL's per-row pass. The tree here: every row opens alike
    (6 tokens); rows 0, 1, 3 and 4 go on alike (5 more); row 3 ends there; rows 0 and 4 are
    the same episode. A stretch shorter than ``MIN_SHARED_TOKENS`` is computed with each
    branch instead (with 6, the 5-token middle)."""
    from agentharness.train import grpo

    monkeypatch.setattr(grpo, "MIN_SHARED_TOKENS", min_shared)
    trainer = make_trainer(tmp_path)
    prompt = random_ids(30, seed=0)
    opening, middle, first, second, other = (random_ids(n, seed=60 + n) for n in (6, 5, 7, 4, 8))
    first[0], second[0] = 11, 12  # where rows 0 and 1 part
    middle[0], other[0] = 13, 14  # where row 2 leaves the others
    completions = [
        opening + middle + first,
        opening + middle + second,
        opening + other,
        opening + middle,
        opening + middle + first,
    ]
    ids, mask, keep = batch([prompt] * 5, completions)
    score = None
    if masked:  # any mask, as long as rows that share tokens share their entries
        row = torch.rand(keep, generator=torch.Generator().manual_seed(3)) < 0.6
        score = row.repeat(5, 1)
        score[2, len(opening) :] = False  # row 2's own tokens are all the environment's
        score[1, len(opening) + len(middle) :] = ~score[1, len(opening) + len(middle) :]
    shared, plain, stats = tree_and_plain_passes(
        trainer, ids, mask, keep, score, keep_activations=0.0 if checkpointed else math.inf
    )
    # Computed once for several rows: the opening, the middle and row 0's (and 4's) ending;
    # for one row: row 1's ending and row 2's (unless the loss reads none of it); with the
    # middle too short for a pass, rows 1 and 3 compute it too.
    assert stats["shared_completion_tokens"] == len(opening) + len(middle) + len(first)
    own = len(second) + (0 if masked else len(other))
    assert stats["row_tokens"] == own + (2 * len(middle) if min_shared > 5 else 0)
    assert_same_where_scored(shared, plain, mask[:, -keep:].bool(), score)


def test_only_the_positions_the_loss_reads_are_scored(tmp_path: Path) -> None:
    """With ``score_mask`` (the model's own tokens) the head skips the rest: those score 0,
    a row with none is not run, and the masked loss's gradients do not change."""
    trainer = make_trainer(tmp_path)
    prompt = random_ids(30, seed=0)
    completions = [random_ids(n, seed=30 + n) for n in (21, 16, 9, 12)]
    ids, mask, keep = batch([prompt] * 4, completions)
    score = torch.rand(4, keep, generator=torch.Generator().manual_seed(3)) < 0.5
    score[2] = False  # a row whose tokens are all the environment's
    weights = torch.randn(4, keep, generator=torch.Generator().manual_seed(1))

    def masked_pass(score_mask: Any) -> tuple[Any, Any, dict, dict]:
        trainer.model.zero_grad()
        stats: dict[str, int] = {}
        logps, entropies = shared_prompt_logps(
            trainer.model,
            ids,
            mask,
            keep,
            compute_entropy=True,
            stats=stats,
            score_mask=score_mask,
            temperature=trainer.temperature,
        )
        loss = ((logps + 0.3 * entropies) * weights * score).sum()
        loss.backward()
        grads = {
            n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None
        }
        return logps.detach(), entropies.detach(), grads, stats

    scored = masked_pass(score)
    everything = masked_pass(None)
    assert scored[3]["rows"] == 3 and everything[3]["rows"] == 4
    real = score & mask[:, -keep:].bool()
    torch.testing.assert_close(scored[0][real], everything[0][real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(scored[1][real], everything[1][real], atol=5e-5, rtol=1e-5)
    assert torch.all(scored[0][~score] == 0) and torch.all(scored[1][~score] == 0)
    assert torch.all(scored[0][real] != 0)
    for name, grad in everything[2].items():
        scale = float(grad.abs().max()) or 1.0
        torch.testing.assert_close(scored[2][name] / scale, grad / scale, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="score_mask is shaped"):
        shared_prompt_logps(trainer.model, ids, mask, keep, score_mask=score[:, :-1])


def test_the_trainer_scores_its_loss_positions(tmp_path: Path, monkeypatch: Any) -> None:
    """During the loss the trainer's pass scores ``completion_mask * tool_mask`` only,
    and outside it, with no generated batch's tool masks known, every position."""
    from trl import GRPOTrainer

    trainer = make_trainer(tmp_path)
    ids, mask, keep = batch([random_ids(24, seed=0)] * 4, [random_ids(7, seed=s) for s in range(4)])
    tool_mask = torch.ones(4, keep, dtype=torch.long)
    tool_mask[:, 2:4] = 0  # a tool result between two model turns
    seen = []

    def loss(self: Any, model: Any, inputs: dict[str, Any]) -> Any:
        seen.append(self._loss_positions.clone())
        return self._get_per_token_logps_and_entropies(model, ids, mask, keep)[0].sum()

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", loss)
    trainer._compute_loss(
        trainer.model, {"completion_mask": mask[:, -keep:], "tool_mask": tool_mask}
    )
    assert torch.equal(seen[0], mask[:, -keep:] * tool_mask)
    assert trainer._loss_positions is None
    logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    assert torch.all(logps[:, 2:4] != 0)
    # A mask of another batch's shape is not applied.
    trainer._loss_positions = tool_mask[:, :-1]
    logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    assert torch.all(logps[:, 2:4] != 0)


def test_a_model_whose_logits_are_transformed_keeps_trls_head(tmp_path: Path) -> None:
    """Softcapped (or scaled) logits are not ``lm_head(hidden)``: TRL's fused head, which
    applies the transform, scores those rows, and the two passes still agree."""
    from agentharness.train.grpo import _head_parts

    trainer = make_trainer(tmp_path)
    assert _head_parts(trainer.model) is not None
    trainer.model.config.final_logit_softcapping = 3.0
    assert _head_parts(trainer.model) is None
    ids, mask, keep = batch(
        [random_ids(25, seed=0)] * 4, [random_ids(n, seed=n) for n in (6, 9, 2, 4)]
    )
    shared = logps_and_grads(trainer, ids, mask, keep)
    assert trainer.prompt_sharing["shared_calls"] == 1
    trainer.shared_prompt = False
    assert_same(shared, logps_and_grads(trainer, ids, mask, keep))
    # With a loss mask the fused head's rows score 0 outside it, as the own head's do.
    score = torch.zeros(4, keep, dtype=torch.bool)
    score[:, 1] = True
    logps, _ = shared_prompt_logps(
        trainer.model, ids, mask, keep, score_mask=score, temperature=trainer.temperature
    )
    torch.testing.assert_close(logps[:, 1], shared[0][:, 1], atol=1e-5, rtol=1e-5)
    assert torch.all(logps[~score] == 0)


def test_the_float32_head_under_bfloat16_autocast() -> None:
    """``fp32`` runs the head's product in float32 inside a bfloat16 autocast region, as TRL's
    ``cast_lm_head_to_fp32``; the default runs it in the autocast dtype."""
    from agentharness.train.grpo import _scored_positions

    g = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(16, 50, bias=False)
    hidden, targets = torch.randn(7, 16, generator=g), torch.randint(0, 50, (7,), generator=g)
    exact = torch.log_softmax(head(hidden) / 0.5, -1).gather(-1, targets[:, None])[:, 0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fp32, _ = _scored_positions(hidden, targets, head, None, temperature=0.5, fp32=True)
        bf16, _ = _scored_positions(hidden, targets, head, None, temperature=0.5, fp32=False)
    torch.testing.assert_close(fp32, exact, atol=1e-6, rtol=1e-6)
    assert not torch.allclose(bf16, exact, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(bf16, exact, atol=0.1, rtol=0.05)


def saved_bytes(trainer: Any, ids: Any, mask: Any, keep: int) -> tuple[int, Any]:
    """Bytes autograd keeps for the backward of one pass (each storage once, the weights
    not counted), and the log-probs of that pass."""
    kept = 0
    seen = {p.untyped_storage().data_ptr() for p in trainer.model.parameters()}

    def pack(tensor: Any) -> Any:
        nonlocal kept
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            kept += storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    return kept, logps


def test_episodes_past_the_activation_budget_are_recomputed_with_the_same_gradients(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Episodes keep their activations for the backward while they fit in
    ``keep_activations_gb`` (by default half the available memory: all of them here) and are
    recomputed in the backward past it (0: every one): autograd holds fewer bytes, and
    log-probs, entropies and gradients do not change. The budget's estimate of what a pass
    keeps is an upper bound of what autograd really holds, and not a loose one."""
    from agentharness.train import grpo

    trainer = make_trainer(tmp_path)
    prompt = random_ids(30, seed=0)
    completions = [random_ids(n, seed=20 + n) for n in (40, 37, 29, 44)]
    ids, mask, keep = batch([prompt] * 4, completions)
    books: list[grpo.ActivationBudget] = []
    original_init = grpo.ActivationBudget.__init__

    def recording_init(self: Any, model: Any, limit: float) -> None:
        original_init(self, model, limit)
        books.append(self)

    monkeypatch.setattr(grpo.ActivationBudget, "__init__", recording_init)
    monkeypatch.setattr(grpo, "available_memory_bytes", lambda: 14 * 2**30)
    monkeypatch.setattr(grpo, "free_heap_bytes", lambda: 2 * 2**30)
    assert trainer.keep_activations_gb is None and trainer._activation_limit() == 8 * 2**30
    kept_bytes, kept_logps = saved_bytes(trainer, ids, mask, keep)
    assert trainer.prompt_sharing["recomputed_tokens"] == 0
    estimate = books[-1].kept
    kept = logps_and_grads(trainer, ids, mask, keep)
    assert kept_bytes <= estimate < 3 * kept_bytes
    trainer.keep_activations_gb = 0
    checkpointed_bytes, checkpointed_logps = saved_bytes(trainer, ids, mask, keep)
    every_token = sum(map(len, completions))  # the rows share no tokens
    assert trainer.prompt_sharing["recomputed_tokens"] == every_token
    checkpointed = logps_and_grads(trainer, ids, mask, keep)
    # Room for about half of the episodes: some are kept, the rest recomputed.
    trainer.keep_activations_gb = estimate / 2 / 2**30
    recomputed = trainer.prompt_sharing["recomputed_tokens"]
    partly_bytes, partly_logps = saved_bytes(trainer, ids, mask, keep)
    assert 0 < trainer.prompt_sharing["recomputed_tokens"] - recomputed < every_token
    partly = logps_and_grads(trainer, ids, mask, keep)
    for logps in (checkpointed_logps, partly_logps):
        torch.testing.assert_close(logps, kept_logps, atol=0, rtol=0)
    assert_same(checkpointed, kept)
    assert_same(partly, kept)
    # Only each row's inputs are kept (plus the prompt's activations, which are shared).
    assert checkpointed_bytes < partly_bytes < kept_bytes
    assert checkpointed_bytes < kept_bytes / 2
    trainer.shared_prompt = False
    assert_same(checkpointed, logps_and_grads(trainer, ids, mask, keep))


def test_under_mimalloc_keeping_its_pages_the_last_passs_activations_count_as_reusable(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """mimalloc's kept pages are resident and free, but neither the system's available memory
    nor glibc's free heap counts them: the limit counts the last pass's kept activations
    (what went back to those pages after its backward) instead, and only under such an
    allocator (pages purged go back to the system, which then counts them as available)."""
    from agentharness.train import grpo

    trainer = make_trainer(tmp_path)
    monkeypatch.setattr(grpo, "available_memory_bytes", lambda: 6 * 2**30)
    monkeypatch.setattr(grpo, "free_heap_bytes", lambda: 0)
    monkeypatch.setattr(grpo, "keeps_freed_pages", lambda: True)
    assert trainer._activation_limit() == 3 * 2**30  # nothing freed yet
    ids, mask, keep = batch(
        [random_ids(30, seed=0)] * 3, [random_ids(n, seed=n) for n in (20, 9, 14)]
    )
    with torch.no_grad():  # a pass without gradients (old or reference log-probs) keeps none
        trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    assert trainer.prompt_sharing["kept_activation_bytes"] == 0
    assert trainer._activation_limit() == 3 * 2**30
    logps_and_grads(trainer, ids, mask, keep)
    kept = trainer.prompt_sharing["kept_activation_bytes"]
    assert kept > 0 and trainer._last_pass_kept == kept
    assert trainer._activation_limit() == 0.5 * (6 * 2**30 + kept)
    logps_and_grads(trainer, ids, mask, keep)  # the same pass again: the last one counts
    assert trainer.prompt_sharing["kept_activation_bytes"] == 2 * kept
    assert trainer._activation_limit() == 0.5 * (6 * 2**30 + kept)
    monkeypatch.setattr(grpo, "free_heap_bytes", lambda: 2 * kept)  # glibc's, when it says more
    assert trainer._activation_limit() == 0.5 * (6 * 2**30 + 2 * kept)
    monkeypatch.setattr(grpo, "keeps_freed_pages", lambda: False)
    monkeypatch.setattr(grpo, "free_heap_bytes", lambda: 0)
    assert trainer._activation_limit() == 3 * 2**30


def test_left_padded_prompts_two_groups_and_an_empty_completion(tmp_path: Path) -> None:
    """Rows of two prompts (the shorter left-padded) in one batch, shuffled as TRL does with
    several groups per step: each prompt is run once; an empty completion scores zeros."""
    trainer = make_trainer(tmp_path)
    long, short = random_ids(33, seed=1), random_ids(26, seed=2)
    prompts = [long, short, long, short]
    completions = [random_ids(9, seed=3), random_ids(14, seed=4), [], random_ids(2, seed=5)]
    ids, mask, keep = batch(prompts, completions)
    shared = logps_and_grads(trainer, ids, mask, keep)
    assert trainer.prompt_sharing["prompt_passes"] == 2 and trainer.prompt_sharing["rows"] == 3
    trainer.shared_prompt = False
    assert_same(shared, logps_and_grads(trainer, ids, mask, keep))
    assert torch.all(shared[0][2] == 0)


def test_rows_with_different_prompts_take_trls_pass(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path)
    prompts = [random_ids(20, seed=s) for s in range(4)]
    ids, mask, keep = batch(prompts, [random_ids(6, seed=9)] * 4)
    logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    assert trainer.prompt_sharing["shared_calls"] == 0
    assert trainer.prompt_sharing["fallback_calls"] == 1
    assert logps.shape == (4, 6)
    # The function itself declines: nothing is shared.
    assert shared_prompt_logps(trainer.model, ids, mask, keep) is None


def test_gradient_checkpointing_takes_trls_pass(tmp_path: Path) -> None:
    """Checkpointed layers drop the KV cache, so the prompt could not be shared."""
    trainer = make_trainer(tmp_path, gradient_checkpointing=True)
    ids, mask, keep = batch([random_ids(20, seed=0)] * 4, [random_ids(6, seed=9)] * 4)
    trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    assert trainer.prompt_sharing["fallback_calls"] == 1
    assert trainer.prompt_sharing["shared_calls"] == 0


def test_completion_mask_with_a_hole_is_not_shared(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path)
    ids, mask, keep = batch([random_ids(20, seed=0)] * 4, [random_ids(6, seed=9)] * 4)
    mask[1, -3] = 0  # not right padding
    assert shared_prompt_logps(trainer.model, ids, mask, keep) is None


def test_lora_adapter_takes_the_shared_path_too(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig

    tok = tiny_tokenizer()
    trainer = shared_prompt_trainer_class()(
        model=tiny_model(tok).train(),
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=GRPOConfig(
            output_dir=str(tmp_path / "trainer"),
            per_device_train_batch_size=4,
            num_generations=4,
            use_cpu=True,
            report_to=[],
            gradient_checkpointing=False,
            bf16=False,
        ),
        train_dataset=Dataset.from_list([{"prompt": "hello"}] * 4),
        processing_class=tok,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]),
    )
    ids, mask, keep = batch(
        [random_ids(30, seed=0)] * 4, [random_ids(n, seed=n) for n in (3, 8, 8, 5)]
    )
    shared = logps_and_grads(trainer, ids, mask, keep)
    assert trainer.prompt_sharing["shared_calls"] == 1
    trainer.shared_prompt = False
    plain = logps_and_grads(trainer, ids, mask, keep)
    assert any("lora" in name for name in shared[2])
    assert_same(shared, plain)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok = tiny_tokenizer()
    directory = tmp_path_factory.mktemp("tiny") / "model"
    tiny_model(tok).save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


@pytest.mark.parametrize(
    ("train_dtype", "shared_prompt"),
    [("float32", True), ("bfloat16", True), ("float32", False), ("auto", True)],
)
def test_train_grpo_on_a_tiny_model_with_a_group_of_4(
    tiny_checkpoint: Path, tmp_path: Path, train_dtype: str, shared_prompt: bool
) -> None:
    """Two multi-turn GRPO steps end to end: one group per batch, its prompt run once (or
    TRL's per-episode pass, one episode per batch)."""
    from agentharness.train.grpo import train_grpo
    from agentharness.train.model import resolve_dtype

    out = tmp_path / "grpo"
    train_grpo(
        ["guess"],
        out,
        model=str(tiny_checkpoint),
        max_steps=2,
        n_instances=2,
        num_generations=4,
        max_turns=2,
        max_new_tokens=8,
        max_completion_length=200,
        learning_rate=1e-3,
        train_dtype=train_dtype,
        shared_prompt=shared_prompt,
        skip_flat_groups=False,  # the tiny model's groups all score 0: compute them anyway
        seed=2,
    )
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 2 and len(summary["losses"]) == 2
    assert all(abs(x) < 1e3 for x in summary["losses"])
    assert len(summary["step_seconds"]) == 2
    # "auto" is recorded as what it resolved to on this machine
    assert summary["options"]["train_dtype"] == resolve_dtype(train_dtype)
    sharing = summary["prompt_sharing"]
    if shared_prompt:
        assert sharing["kept_activation_bytes"] > 0
        assert {k: v for k, v in sharing.items() if not k.endswith(("_tokens", "_bytes"))} == {
            "shared_calls": 2,
            "fallback_calls": 0,
            "prompt_passes": 2,
            # each run before its group's rollouts, which decoded on from its keys and values
            "prompts_from_rollouts": 2,
            "rows": 8,
            "skipped_flat_batches": 0,
        }
        # The loss reads the model's tokens only: the environment's replies are not scored.
        computed = sharing["row_tokens"] + sharing["shared_completion_tokens"]
        assert 0 < sharing["scored_tokens"] < computed
    else:
        assert sharing["shared_calls"] == 0 and sharing["fallback_calls"] == 8
    assert (out / "final" / "config.json").is_file()
    assert len(list(RunDir(out / "rollouts").episodes())) == 8


def test_two_groups_per_step_share_each_prompt(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """``prompts_per_step`` 2: a batch is a group's size, TRL shuffles the two groups into the
    two batches, and each batch runs each of its prompts once."""
    from agentharness.train.grpo import train_grpo

    out = tmp_path / "grpo"
    train_grpo(
        ["guess"],
        out,
        model=str(tiny_checkpoint),
        max_steps=1,
        n_instances=2,
        num_generations=4,
        prompts_per_step=2,
        max_turns=2,
        max_new_tokens=8,
        max_completion_length=200,
        train_dtype="float32",
        skip_flat_groups=False,
        seed=3,
    )
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 1 and len(summary["losses"]) == 1
    sharing = summary["prompt_sharing"]
    # Four rows of two prompts always share one: no batch falls back.
    assert sharing["shared_calls"] == 2 and sharing["fallback_calls"] == 0
    assert sharing["rows"] == 8 and 2 <= sharing["prompt_passes"] <= 4
    assert len(list(RunDir(out / "rollouts").episodes())) == 8


def test_train_grpo_skips_exactly_the_groups_whose_rewards_are_equal(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    from agentharness.train.grpo import train_grpo

    out = tmp_path / "grpo"
    train_grpo(
        ["guess"],
        out,
        model=str(tiny_checkpoint),
        max_steps=2,
        n_instances=2,
        num_generations=4,
        max_turns=2,
        max_new_tokens=8,
        max_completion_length=200,
        train_dtype="float32",
        seed=2,
    )
    summary = json.loads((out / "train_summary.json").read_text())
    totals = [record.reward.total for record in RunDir(out / "rollouts").episodes()]
    groups = [totals[:4], totals[4:]]  # one group of 4 per step, in the order played
    flat = sum(len(set(group)) == 1 for group in groups)
    assert len(totals) == 8 and summary["steps"] == 2
    sharing = summary["prompt_sharing"]
    assert sharing["skipped_flat_batches"] == flat, groups
    assert sharing["shared_calls"] == 2 - flat


def test_train_dtype_is_checked_before_a_model_is_loaded(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentharness.cli.main import app
    from agentharness.train.grpo import train_grpo

    with pytest.raises(ValueError, match="train_dtype"):
        train_grpo(["guess"], tmp_path / "x", model="/nonexistent", train_dtype="float16")
    r = CliRunner().invoke(
        app, ["train", "grpo", "--tasks", "guess", "--train-dtype", "fp16", "--out", str(tmp_path)]
    )
    assert r.exit_code == 2 and "--train-dtype 'fp16': choose auto, float32, bfloat16" in r.output


def test_rollouts_inside_the_trainer_sample_with_the_model_asked_for() -> None:
    """The trainer patches ``forward`` on the model instance (TRL's fused LM head; with
    ``train_dtype`` bfloat16, accelerate's autocast wrapper). The bfloat16 sampling copy must
    run its own weights, and float32 sampling must not run under the training autocast."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from trl.trainer.utils import add_fused_lm_head

    from agentharness.train.decode import sampler
    from agentharness.train.grpo import class_forward

    tok = tiny_tokenizer()
    net = tiny_model(tok)
    ids = torch.tensor([random_ids(12, seed=0)])
    with torch.no_grad():
        plain = net(input_ids=ids).logits
    add_fused_lm_head(net, outputs=("log_probs", "entropy"))
    AcceleratorState._reset_state(reset_partial_state=True)  # as TrainingArguments does
    net = Accelerator(cpu=True, mixed_precision="bf16").prepare_model(net)
    AcceleratorState._reset_state(reset_partial_state=True)
    with torch.no_grad():
        autocast = net(input_ids=ids).logits
        assert not torch.equal(autocast, plain)  # bfloat16 products
        with class_forward(net):
            torch.testing.assert_close(net(input_ids=ids).logits, plain, atol=1e-6, rtol=0)
        clone = sampler(net, "bfloat16")
        copied = clone(input_ids=ids).logits
        assert next(clone.parameters()).dtype == torch.bfloat16
        for p in net.parameters():
            p.zero_()  # the copy's forward must not read the original's weights
        torch.testing.assert_close(clone(input_ids=ids).logits, copied)
        assert copied.dtype == torch.bfloat16


def loss_grads(trainer: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """Gradients of one ``compute_loss`` call (None for a weight the loss does not reach)."""
    trainer.model.zero_grad(set_to_none=True)
    trainer.compute_loss(trainer.model, inputs).backward()
    return {n: p.grad for n, p in trainer.model.named_parameters() if p.requires_grad}


def test_a_group_with_equal_rewards_is_skipped_with_the_same_zero_gradient(
    tmp_path: Path,
) -> None:
    """All-zero advantages give TRL's loss an exactly zero gradient (beta 0); the skip gives
    every weight that same zero gradient without computing the group, so the optimizer's
    step is unchanged. A group whose rewards differ is computed as before."""
    trainer = make_trainer(tmp_path)
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train for each step
    prompt = random_ids(20, seed=0)
    completions = [random_ids(n, seed=30 + n) for n in (9, 6, 12, 3)]
    ids, mask, keep = batch([prompt] * 4, completions)
    inputs = {
        "prompt_ids": ids[:, :-keep],
        "prompt_mask": mask[:, :-keep],
        "completion_ids": ids[:, -keep:],
        "completion_mask": mask[:, -keep:],
        "advantages": torch.zeros(4),
        "num_items_in_batch": mask[:, -keep:].sum(),
    }
    trainer.skip_flat_groups = False
    computed = loss_grads(trainer, inputs)
    assert trainer.prompt_sharing["shared_calls"] == 1
    assert all(g is not None and not g.any() for g in computed.values())

    trainer.skip_flat_groups = True
    skipped = loss_grads(trainer, inputs)
    assert trainer.prompt_sharing["skipped_flat_batches"] == 1
    assert trainer.prompt_sharing["shared_calls"] == 1  # no pass over the group
    assert skipped.keys() == computed.keys()
    assert all(g is not None and not g.any() for g in skipped.values())

    rewarded = loss_grads(trainer, {**inputs, "advantages": torch.tensor([1.0, -1.0, 0.5, -0.5])})
    assert trainer.prompt_sharing["shared_calls"] == 2
    assert trainer.prompt_sharing["skipped_flat_batches"] == 1
    assert any(g is not None and g.any() for g in rewarded.values())


def test_the_reference_pass_reads_each_prompt_once(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """With a KL term the reference model's prompt keys and values are kept: a prompt it has
    read is not computed again, and its log-probabilities are those of a pass without the
    cache; a reference model that TRL syncs to the policy keeps none."""
    from datasets import Dataset
    from trl import GRPOConfig

    def reference_trainer(**config: Any) -> Any:
        args = GRPOConfig(
            output_dir=str(tmp_path / "trainer"), per_device_train_batch_size=4,
            num_generations=4, temperature=0.7, use_cpu=True, report_to=[],
            gradient_checkpointing=False, bf16=False, **{"beta": 0.04, **config},
        )  # fmt: skip
        return shared_prompt_trainer_class()(
            model=str(tiny_checkpoint),
            reward_funcs=lambda completions, **kw: [0.0] * len(completions),
            args=args,
            train_dataset=Dataset.from_list([{"prompt": "hello"}] * 4),
            processing_class=tiny_tokenizer(),
        )

    trainer = reference_trainer()
    prompt = random_ids(40, seed=0)
    ids, mask, keep = batch([prompt] * 4, [random_ids(n, seed=n) for n in (9, 5, 7, 3)])
    with torch.no_grad():
        first = trainer._get_per_token_logps_and_entropies(trainer.ref_model, ids, mask, keep)[0]
        cache = trainer.reference_cache
        assert (cache.reused_tokens, cache.computed_tokens) == (0, 39)
        again = trainer._get_per_token_logps_and_entropies(trainer.ref_model, ids, mask, keep)[0]
        assert (cache.reused_tokens, cache.computed_tokens) == (39, 39)
        # the policy's passes never use it
        trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
        assert (cache.reused_tokens, cache.computed_tokens) == (39, 39)
        trainer.reference_cache = None
        plain = trainer._get_per_token_logps_and_entropies(trainer.ref_model, ids, mask, keep)[0]
    torch.testing.assert_close(first, plain, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(again, plain, atol=1e-5, rtol=1e-5)
    assert reference_trainer(sync_ref_model=True).reference_cache is None
    assert reference_trainer(beta=0.0).reference_cache is None  # no reference model


def test_passes_without_gradients_score_the_generated_model_tokens(tmp_path: Path) -> None:
    """The reference and old log-probabilities of the batch just generated are read where
    the loss reads them (its model tokens), so the environment's tokens are not scored;
    with gradients and no loss positions, and for another batch's shape, every position."""
    trainer = make_trainer(tmp_path)
    ids, mask, keep = batch(
        [random_ids(24, seed=0)] * 4, [random_ids(n, seed=n) for n in (7, 6, 7, 5)]
    )
    tool_masks = [[1, 1, 0, 0, 1, 1, 1], [1, 1, 0, 0, 1, 1], [1, 0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1]]
    trainer._generated_tool_masks = tool_masks
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    for row, tools in enumerate(tool_masks):
        for column, model_token in enumerate(tools):
            assert (logps[row, column] != 0) == bool(model_token), (row, column)
    logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    assert torch.all(logps[mask[:, -keep:].bool()] != 0)
    trainer._generated_tool_masks = tool_masks[:3]
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    assert torch.all(logps[mask[:, -keep:].bool()] != 0)


def test_train_grpo_with_a_kl_term_reuses_the_reference_prompt(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    """Two steps on one instance with ``beta`` > 0: the second step's reference pass reuses
    the whole prompt the first computed."""
    from agentharness.train.grpo import train_grpo

    out = tmp_path / "grpo"
    train_grpo(
        ["guess"], out, model=str(tiny_checkpoint), max_steps=2, n_instances=1,
        num_generations=4, max_turns=2, max_new_tokens=8, max_completion_length=200,
        train_dtype="float32", beta=0.04, seed=2,
    )  # fmt: skip
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 2 and len(summary["losses"]) == 2
    reference = summary["reference_prompt_tokens"]
    assert reference["computed"] > 0 and reference["reused"] == reference["computed"]


def test_a_prompt_forward_run_before_the_rollouts_serves_the_training_pass(
    tmp_path: Path,
) -> None:
    """``PromptPasses.compute`` runs the training pass's prompt forward when a group starts;
    the training pass takes it (once, at the same optimizer step) and its log-probabilities,
    entropies and gradients are those of computing the prompt itself."""
    trainer = make_trainer(tmp_path)
    prompt = random_ids(40, seed=0)
    ids, mask, keep = batch([prompt] * 4, [random_ids(n, seed=n) for n in (9, 5, 7, 3)])
    plain = logps_and_grads(trainer, ids, mask, keep)
    passes = trainer.prompt_passes
    kv = passes.compute(prompt)
    assert kv is not None and kv[0][0].shape[-2] == 39 and not kv[0][0].requires_grad
    assert_same(logps_and_grads(trainer, ids, mask, keep), plain)
    assert (passes.computed, passes.taken) == (1, 1)
    assert trainer.prompt_sharing["prompts_from_rollouts"] == 1
    assert_same(logps_and_grads(trainer, ids, mask, keep), plain)  # given once
    assert passes.taken == 1
    passes.compute(prompt)
    trainer.state.global_step += 1  # an optimizer step since: not taken
    assert_same(logps_and_grads(trainer, ids, mask, keep), plain)
    passes.compute(prompt)
    passes.drop(prompt)  # a group set aside
    with torch.no_grad():  # a pass without gradients (old log-probabilities) never takes it
        passes.compute(prompt)
        trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
    passes.clear()
    assert_same(logps_and_grads(trainer, ids, mask, keep), plain)
    assert passes.taken == 1
    trainer.shared_prompt = False  # TRL's pass: the rollouts read the prompt themselves
    assert passes.compute(prompt) is None
