"""Real (tiny) SFT and GRPO runs of the bundled SmolLM2-135M on CPU, and loading the result.

Each run is a few optimizer steps on very short sequences; together with the one-time
GGUF conversion of the session fixture they take a few minutes on 2 cores.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl", reason="needs the 'train' extra")

from typer.testing import CliRunner

from agentharness.agents import ExpertAgent
from agentharness.cli.main import app
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import Budgets
from agentharness.rollout.runner import plan, run, run_one
from agentharness.store.run import RunDir
from agentharness.train.chat import plain_chat, render

pytestmark = pytest.mark.slow


def weights(directory: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


def changed_tensors(a: dict[str, Any], b: dict[str, Any]) -> int:
    import torch

    assert a.keys() == b.keys()
    return sum(not torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def sft_run(smol_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two SFT steps on exported expert trajectories (text tool format), via the CLI."""
    from agentharness.export.sft import export_sft

    tmp = tmp_path_factory.mktemp("sft")
    runs = RunDir(tmp / "expert")
    runs.create({"command": "test"})
    items = plan([get_task("robot_reach")], n=2, k=1, seed=0, difficulty="easy")
    asyncio.run(run(items, ExpertAgent(), runs))
    data = tmp / "sft.jsonl"
    assert export_sft([runs.path], data, tool_format="text") == 2
    out = tmp / "model"
    result = CliRunner().invoke(
        app,
        [
            "train", "sft", "--data", str(data), "--out", str(out), "--model", str(smol_checkpoint),
            "--max-steps", "2", "--max-length", "320", "--truncation", "keep_end", "--lr", "1e-4",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_sft_changes_parameters_with_finite_losses(sft_run: Path, smol_checkpoint: Path) -> None:
    summary = json.loads((sft_run / "train_summary.json").read_text())
    assert summary["steps"] == 2 and len(summary["losses"]) == 2
    assert all(0 < loss < 20 for loss in summary["losses"])  # finite, and a real LM loss
    assert summary["assistant_tokens"] > 0
    assert summary["peak_resident_gb"] > 0.3  # at least the model and its optimizer state
    assert changed_tensors(weights(smol_checkpoint), weights(sft_run / "final")) > 10


def test_sft_reports_checkpoints_resumes_and_shows_progress(
    sft_run: Path, smol_checkpoint: Path
) -> None:
    """--report-to tensorboard, --save-steps, --resume (past a checkpoint left half-written)
    and the progress bar, via the CLI."""
    data = sft_run.parent / "sft.jsonl"
    out = sft_run.parent / "resumable"
    common = [
        "train", "sft", "--data", str(data), "--out", str(out), "--model", str(smol_checkpoint),
        "--max-length", "320", "--truncation", "keep_end", "--lr", "1e-4",
    ]  # fmt: skip
    r = CliRunner().invoke(app, [*common, "--resume"])
    assert r.exit_code == 2 and "no checkpoint under" in r.output  # nothing to resume yet
    r = CliRunner().invoke(app, [*common, "--report-to", "no-such-tracker"])
    assert r.exit_code == 2 and "no such tracker installed" in r.output

    r = CliRunner().invoke(
        app, [*common, "--max-steps", "2", "--save-steps", "1", "--report-to", "tensorboard"]
    )
    assert r.exit_code == 0, r.output
    assert "2/2" in r.output  # the progress bar (on by default)
    assert {p.name for p in (out / "trainer").glob("checkpoint-*")} == {
        "checkpoint-1",
        "checkpoint-2",
    }
    assert list(out.rglob("events.out.tfevents.*"))  # TensorBoard got the losses

    # A run stopped while saving step 3 left a checkpoint without its trainer state:
    # --resume goes on from checkpoint-2 and writes checkpoint-3 again.
    (out / "trainer" / "checkpoint-3").mkdir()
    (out / "trainer" / "checkpoint-3" / "model.safetensors").write_bytes(b"\0" * 100)
    r = CliRunner().invoke(
        app, [*common, "--max-steps", "3", "--save-steps", "1", "--resume", "--no-progress"]
    )
    assert r.exit_code == 0, r.output
    assert "skipping checkpoint-3" in r.output and "resuming from checkpoint-2" in r.output
    assert (out / "trainer" / "checkpoint-3" / "trainer_state.json").exists()
    assert "3/3" not in r.output
    summary = json.loads((out / "train_summary.json").read_text())
    # Steps 1-2 came back with the checkpoint (its log history), step 3 was trained now.
    assert summary["steps"] == 3 and len(summary["losses"]) == 3
    assert (out / "trainer" / "checkpoint-3").is_dir()
    assert not (out / "trainer" / "checkpoint-1").exists()  # only the last two are kept


def test_sft_trains_under_bfloat16_autocast(sft_run: Path, smol_checkpoint: Path) -> None:
    """--train-dtype bfloat16: a finite loss, float32 weights that changed; a bad dtype is refused."""
    common = [
        "train", "sft", "--data", str(sft_run.parent / "sft.jsonl"), "--model", str(smol_checkpoint),
        "--max-steps", "1", "--max-length", "320", "--truncation", "keep_end", "--lr", "1e-4",
    ]  # fmt: skip
    bad = CliRunner().invoke(
        app, [*common, "--out", str(sft_run.parent / "bad"), "--train-dtype", "fp8"]
    )
    assert bad.exit_code != 0 and "choose auto, float32, bfloat16" in bad.output
    out = sft_run.parent / "bf16"
    r = CliRunner().invoke(app, [*common, "--out", str(out), "--train-dtype", "bfloat16"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "train_summary.json").read_text())
    assert len(summary["losses"]) == 1 and 0 < summary["losses"][0] < 20
    trained = weights(out / "final")
    assert {str(t.dtype) for t in trained.values()} == {"torch.float32"}
    assert changed_tensors(weights(smol_checkpoint), trained) > 10


def test_local_agent_loads_the_trained_checkpoint(sft_run: Path) -> None:
    from agentharness.agents.local import LocalAgent

    final = sft_run / "final"
    agent = LocalAgent(model=str(final), max_new_tokens=6, temperature=0.0)
    assert agent.name == "local:final"
    inst = get_task("robot_reach").instance(0, "easy")
    episode, _ = asyncio.run(run_one(inst, agent.policy(inst), budgets=Budgets(max_turns=1)))
    assert episode.turns == 1 and 0 < episode.usage.completion_tokens <= 6
    # and through the command line, as `bootcamp eval` / `bootcamp loop` use it
    out = sft_run.parent / "eval"
    result = CliRunner().invoke(
        app,
        [
            "eval", "--agent", "local", "--model", str(final), "--tasks", "robot_reach", "-n", "1",
            "--difficulty", "easy", "--max-turns", "1", "--max-tokens", "4", "--quiet", "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (record,) = RunDir(out).episodes()
    assert record.agent == "local:final" and record.turns == 1


def one_letters_step(checkpoint: Path, out: Path, **options: Any) -> Path:
    """One GRPO step (or ``max_steps``) of one group of 3 on the one-turn ``letters`` task
    (seed 1)."""
    from agentharness.train.grpo import train_grpo

    return train_grpo(
        ["letters"],
        out,
        model=str(checkpoint),
        n_instances=1,
        num_generations=3,
        max_turns=1,
        max_new_tokens=16,
        max_completion_length=32,
        learning_rate=1e-4,
        seed=1,
        **{"max_steps": 1, **options},
    )


def test_grpo_step_updates_parameters_from_environment_rewards(
    smol_checkpoint: Path, tmp_path: Path
) -> None:
    """One GRPO step on the one-turn ``letters`` task (its reward varies with any reply)."""
    out = tmp_path / "grpo"
    final = one_letters_step(smol_checkpoint, out)
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 1 and all(abs(x) < 1e3 for x in summary["losses"])
    assert summary["peak_resident_gb"] > 0.3  # at least the model and its optimizer state
    assert changed_tensors(weights(smol_checkpoint), weights(final)) > 10
    # The rewards are the task's own: re-scoring each logged episode gives the same value,
    # and their mean is what the trainer logged.
    records = list(RunDir(out / "rollouts").episodes())
    assert len(records) == 3 and len({r.reward.total for r in records}) > 1
    for r in records:
        episode = episode_for(r.instance)
        episode.step(next(m for m in r.messages if m.role == "assistant").text)
        assert episode.reward().total == pytest.approx(r.reward.total)
    mean = sum(r.reward.total for r in records) / 3
    assert summary["mean_reward_per_step"] == [pytest.approx(mean, abs=1e-5)]


def test_grpo_on_success_leaves_a_group_nobody_solves_untrained(
    smol_checkpoint: Path, tmp_path: Path
) -> None:
    """``reward_signal="success"``: episodes whose totals differ but none solved are one
    flat group, so the step trains nothing (under "total" the same seed's group trains)."""
    out = tmp_path / "grpo"
    final = one_letters_step(smol_checkpoint, out, reward_signal="success")
    records = list(RunDir(out / "rollouts").episodes())
    assert len({r.reward.total for r in records}) > 1 and not any(r.reward.success for r in records)
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["mean_reward_per_step"] == [0.0]
    assert changed_tensors(weights(smol_checkpoint), weights(final)) == 0


def test_grpo_with_a_kl_term_trains_the_bundled_gguf_model(tmp_path: Path) -> None:
    """beta > 0 on the bundled model (a .gguf file, no config.json in its directory): the
    reference model is a copy of the initial policy (TRL would read a config.json)."""
    from agentharness.train.grpo import train_grpo

    out = tmp_path / "grpo"
    train_grpo(
        ["letters"], out, model=None, n_instances=1, num_generations=3, max_turns=1,
        max_new_tokens=8, max_completion_length=32, learning_rate=1e-4, beta=0.04, seed=1,
        max_steps=1, progress=False,
    )  # fmt: skip
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == 1 and summary["options"]["beta"] == 0.04
    assert (out / "final" / "config.json").is_file()


def test_a_resumed_grpo_run_goes_on_with_the_instances_after_its_checkpoint(
    smol_checkpoint: Path, tmp_path: Path
) -> None:
    """Each checkpoint holds the rollout function's instance streams; a run resumed from
    one draws the fresh instances after those played before it (none twice)."""
    from agentharness.train.grpo import RolloutStreams

    out = tmp_path / "grpo"
    options: dict[str, Any] = {"resample_flat": 1, "save_steps": 1, "reward_signal": "success"}
    one_letters_step(smol_checkpoint, out, **{**options, "max_steps": 2})
    saved = RolloutStreams.load(out / "trainer" / "checkpoint-2")
    assert sum(saved.cursor.values()) == 2  # one group a step
    assert saved.fresh  # seed 1's group is flat (no episode solves it): it was replaced
    one_letters_step(smol_checkpoint, out, **{**options, "max_steps": 3, "resume": True})
    resumed = RolloutStreams.load(out / "trainer" / "checkpoint-3")
    assert sum(resumed.cursor.values()) == 3
    records = list(RunDir(out / "rollouts").episodes())
    played = sorted({r.seed for r in records if r.seed >= 200_000})
    assert len(played) == resumed.fresh.get("letters-v1", 0)  # each fresh seed played once
    assert played == list(range(200_000, 200_000 + len(played)))


def test_multi_turn_rollout_tokens_are_what_the_local_agent_sees(smol_checkpoint: Path) -> None:
    """A 3-turn episode: sampled tokens (mask 1) interleaved with environment tokens (mask 0)
    decode to exactly the conversation the local agent would render."""
    from agentharness.train.grpo import EpisodeRoller, GRPOOptions
    from agentharness.train.model import load_trainable

    net, tok = load_trainable(str(smol_checkpoint))
    opts = GRPOOptions(max_turns=3, max_new_tokens=12, max_completion_length=400, seed=3)
    roller = EpisodeRoller(net, tok, opts)
    instance = get_task("guess").instance(0, "easy")
    (rollout,) = roller.play_group(instance, 1, seed=5)
    assert net.training  # restored after generation
    assert len(rollout.completion_ids) == len(rollout.env_mask)
    assert rollout.turns == 3 and rollout.end_reason in ("max_turns", "format_error", "no_answer")
    assert 1 in rollout.env_mask and 0 in rollout.env_mask
    record = rollout.record
    chat = plain_chat(record.messages, record.tools)
    full = tok.decode(rollout.prompt_ids + rollout.completion_ids, skip_special_tokens=False)
    expected = render(tok, chat, generation_prompt=False)
    assert expected.startswith(full) and len(expected) - len(full) <= len("<|im_end|>\n")
    sampled = tok.decode(
        [t for t, m in zip(rollout.completion_ids, rollout.env_mask, strict=True) if m],
        skip_special_tokens=True,
    )
    assert sampled == "".join(m.text for m in record.messages if m.role == "assistant")
    assert rollout.reward == pytest.approx(record.reward.total)


def test_an_episode_plays_its_tasks_budget_not_the_default(smol_checkpoint: Path) -> None:
    """``task_budgets`` sets the turns and the tokens a turn may sample for that task."""
    import itertools

    from agentharness.train.grpo import EpisodeRoller, GRPOOptions
    from agentharness.train.model import load_trainable

    net, tok = load_trainable(str(smol_checkpoint))
    opts = GRPOOptions(
        max_turns=1, max_new_tokens=40, max_completion_length=400, task_budgets={"guess": (3, 6)}
    )
    (rollout,) = EpisodeRoller(net, tok, opts).play_group(
        get_task("guess").instance(0, "easy"), 1, 5
    )
    turns = [len(list(run)) for sampled, run in itertools.groupby(rollout.env_mask) if sampled]
    assert rollout.turns == 3 == len(turns) and max(turns) <= 6


def test_group_played_in_one_batch_samples_what_each_episode_would_alone(
    smol_checkpoint: Path,
) -> None:
    """Lockstep batching pads rows of different lengths; every sampled token's log-probability
    must still equal the one an unbatched forward pass over that episode gives."""
    import torch

    from agentharness.train.grpo import EpisodeRoller, GRPOOptions
    from agentharness.train.model import load_trainable

    net, tok = load_trainable(str(smol_checkpoint))
    opts = GRPOOptions(max_turns=3, max_new_tokens=10, max_completion_length=400, seed=3)
    roller = EpisodeRoller(net, tok, opts)
    instance = get_task("guess").instance(0, "easy")
    # The first sampling seed whose episodes end at different lengths (most groups have all
    # three at the cap). Which seed that is depends on the CPU's floating-point rounding.
    for seed in range(16):
        rollouts = roller.play_group(instance, 3, seed)
        if len({len(r.completion_ids) for r in rollouts}) > 1:
            break
    else:
        pytest.fail("no sampling seed in 0..15 gave episodes of different lengths")
    assert len({tuple(r.completion_ids) for r in rollouts}) == 3  # independent samples
    net.eval()
    for r in rollouts:
        ids = torch.tensor([r.prompt_ids + r.completion_ids])
        with torch.no_grad():
            logp = torch.log_softmax(net(input_ids=ids).logits[0].float(), -1)
        start = len(r.prompt_ids) - 1
        for i, (token, sampled) in enumerate(zip(r.completion_ids, r.env_mask, strict=True)):
            if sampled:
                assert float(logp[start + i, token]) == pytest.approx(r.logprobs[i], abs=1e-3)
