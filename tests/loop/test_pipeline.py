from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from agentharness.agents import Agent, ExpertAgent, NoisyAgent
from agentharness.loop.checks import LoopInputError
from agentharness.loop.mine import MineReport
from agentharness.loop.pipeline import (
    STAGES,
    AgentOptions,
    LoopConfig,
    LoopHooks,
    default_agent_factory,
    run_loop,
)
from agentharness.loop.results import LoopSummary
from agentharness.store import EpisodeRecord, LoadedRuns, load_runs, read_instances


def load_run(path: Path, *, allow_empty: bool = False) -> LoadedRuns:
    return load_runs([path], allow_empty=allow_empty)


def read_instances_file(path: Path) -> list:  # type: ignore[type-arg]
    return read_instances(path, allow_empty=True)


CONFIG = LoopConfig(
    student="noisy:0.5", teacher="expert", tasks="guess", heldout_n=6, synth_n=6, concurrency=2
)


class Interrupt(Exception):
    pass


def quiet(_: str) -> None:
    return None


def markers(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): p.read_text() for p in sorted(out.glob("round_*/*.done"))}


def test_two_rounds_write_every_stage_and_a_rerun_redoes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "loop"
    summary = run_loop(CONFIG.model_copy(update={"rounds": 2}), out, log=quiet)
    heldout = read_instances_file(out / "heldout.jsonl")
    assert len(heldout) == 6
    for k in (1, 2):
        rd = out / f"round_{k}"
        stages = [s for s in STAGES if k == 1 or s != "heldout_before"]
        assert sorted(p.stem for p in rd.glob("*.done")) == sorted(stages)
        for f in ("mine.json", "synth.jsonl", "sft.jsonl", "compare.json"):
            assert (rd / f).is_file()
        for run in ("teacher", "filtered", "heldout_after"):
            load_run(rd / run, allow_empty=True)
        synth = read_instances_file(rd / "synth.jsonl")
        assert synth and all(i.provenance for i in synth)
        assert not {i.instance_id for i in synth} & {i.instance_id for i in heldout}
        teacher = load_run(rd / "teacher").records
        assert len(teacher) == len(synth) == len({r.episode_id for r in teacher})
        mined = MineReport.model_validate_json((rd / "mine.json").read_text())
        assert mined.failures > 0
        for r in load_run(rd / "heldout_after").records:
            assert r.instance in heldout
    s1 = read_instances_file(out / "round_1" / "synth.jsonl")
    s2 = read_instances_file(out / "round_2" / "synth.jsonl")
    assert not {i.instance_id for i in s1} & {i.instance_id for i in s2}
    assert [r.round for r in summary.rounds] == [1, 2]
    assert LoopSummary.model_validate_json((out / "summary.json").read_text()) == summary

    before = markers(out)
    started: list[tuple[int, str]] = []
    hooks = LoopHooks(stage_started=lambda k, s: started.append((k, s)))
    again = run_loop(CONFIG.model_copy(update={"rounds": 2}), out, hooks=hooks, log=quiet)
    assert started == [] and markers(out) == before and again == summary


def test_a_loop_interrupted_mid_stage_resumes_without_redoing_or_duplicating(
    tmp_path: Path,
) -> None:
    out = tmp_path / "loop"
    seen: list[str] = []

    def crash_in_teacher(k: int, stage: str, record: EpisodeRecord) -> None:
        if stage == "teacher":
            seen.append(record.episode_id)
            if len(seen) == 3:
                raise Interrupt("killed mid-stage")

    with pytest.raises(Interrupt):
        run_loop(CONFIG, out, hooks=LoopHooks(episode_done=crash_in_teacher), log=quiet)
    rd = out / "round_1"
    assert not (rd / "teacher.done").exists()
    partial = load_run(rd / "teacher", allow_empty=True).records
    assert 3 <= len(partial) < 6
    done_before = markers(out)
    assert set(done_before) == {f"round_1/{s}.done" for s in ("heldout_before", "mine", "synth")}

    started: list[str] = []
    ran: list[str] = []
    hooks = LoopHooks(
        stage_started=lambda k, s: started.append(s),
        episode_done=lambda k, s, r: ran.append(r.episode_id) if s == "teacher" else None,
    )
    run_loop(CONFIG, out, hooks=hooks, log=quiet)
    assert started == ["teacher", "filter", "export", "train", "heldout_after", "compare"]
    assert not set(ran) & {r.episode_id for r in partial}  # finished episodes were not rerun
    teacher = load_run(rd / "teacher").records
    synth = read_instances_file(rd / "synth.jsonl")
    assert len(teacher) == len(synth) == len({r.episode_id for r in teacher})
    assert {r.instance.instance_id for r in teacher} == {i.instance_id for i in synth}
    assert {k: v for k, v in markers(out).items() if k in done_before} == done_before


def test_a_stage_killed_before_its_marker_is_redone_with_the_same_output(tmp_path: Path) -> None:
    out = tmp_path / "loop"

    def crash_after_synth(k: int, stage: str) -> None:
        if stage == "synth":
            raise Interrupt("killed before the marker")

    with pytest.raises(Interrupt):
        run_loop(CONFIG, out, hooks=LoopHooks(stage_written=crash_after_synth), log=quiet)
    first = (out / "round_1" / "synth.jsonl").read_text()
    assert not (out / "round_1" / "synth.done").exists()
    started: list[str] = []
    run_loop(CONFIG, out, hooks=LoopHooks(stage_started=lambda k, s: started.append(s)), log=quiet)
    assert started[0] == "synth" and "heldout_before" not in started
    assert (out / "round_1" / "synth.jsonl").read_text() == first


def test_resume_with_other_settings_is_refused_but_more_rounds_continue(tmp_path: Path) -> None:
    out = tmp_path / "loop"
    run_loop(CONFIG, out, log=quiet)
    with pytest.raises(LoopInputError, match=r"student: 'noisy:0.5' -> 'noisy:0.2'"):
        run_loop(CONFIG.model_copy(update={"student": "noisy:0.2"}), out, log=quiet)
    started: list[tuple[int, str]] = []
    hooks = LoopHooks(stage_started=lambda k, s: started.append((k, s)))
    run_loop(CONFIG.model_copy(update={"rounds": 2}), out, hooks=hooks, log=quiet)
    assert {k for k, _ in started} == {2}


def test_bad_settings_fail_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(LoopInputError, match="student must be `local`"):
        run_loop(CONFIG.model_copy(update={"trainer": "sft"}), tmp_path / "a", log=quiet)
    with pytest.raises(LoopInputError, match="unknown task"):
        run_loop(CONFIG.model_copy(update={"tasks": "nope"}), tmp_path / "b", log=quiet)
    with pytest.raises(LoopInputError, match="no difficulty 'extreme'"):
        run_loop(CONFIG.model_copy(update={"difficulty": "extreme"}), tmp_path / "c", log=quiet)
    with pytest.raises(LoopInputError, match="noisy"):
        run_loop(CONFIG.model_copy(update={"student": "noisy:x"}), tmp_path / "d", log=quiet)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "stuff.txt").write_text("mine")
    with pytest.raises(LoopInputError, match="not empty"):
        run_loop(CONFIG, tmp_path / "e", log=quiet)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_missing_trainer_is_reported_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "agentharness.train.sft", None)  # import fails
    cfg = CONFIG.model_copy(update={"student": "local", "trainer": "sft"})
    with pytest.raises(LoopInputError, match=r"needs agentharness.train.sft.train_sft"):
        run_loop(cfg, tmp_path / "loop", log=quiet)
    assert not (tmp_path / "loop").exists()


def test_sft_trainer_output_becomes_the_student(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, object]] = []

    def train_sft(data: Path, out: Path, model: str | None, max_steps: int | None) -> None:
        calls.append({"data": data, "out": out, "model": model, "max_steps": max_steps})
        (out / "final").mkdir(parents=True)

    fake = types.ModuleType("agentharness.train.sft")
    fake.train_sft = train_sft  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agentharness.train.sft", fake)

    def factory(kind: str, opts: AgentOptions) -> Agent:
        # A stand-in for transformers: the untrained "local" model is noisy, the trained one expert.
        if kind == "local":
            trained = opts.model is not None and opts.model.endswith("final")
            return ExpertAgent() if trained else NoisyAgent(0.5)
        return default_agent_factory(kind, opts)

    out = tmp_path / "loop"
    cfg = CONFIG.model_copy(
        update={
            "student": "local",
            "student_model": "base-ckpt",
            "trainer": "sft",
            "train_max_steps": 5,
        }
    )
    summary = run_loop(cfg, out, agent_factory=factory, log=quiet)
    (call,) = calls
    assert call["data"] == out / "round_1" / "sft.jsonl" and call["model"] == "base-ckpt"
    assert call["max_steps"] == 5
    assert load_run(out / "round_1" / "heldout_after").records[0].agent == "expert"
    head = summary.rounds[0]
    assert head.trained is True and head.sft_rows > 0
    assert head.compare.verdict == "better"


def test_a_student_without_failures_gives_an_empty_round(tmp_path: Path) -> None:
    out = tmp_path / "loop"
    summary = run_loop(CONFIG.model_copy(update={"student": "expert"}), out, log=quiet)
    (head,) = summary.rounds
    assert head.failures == 0 and head.synthesized == 0 and head.sft_rows == 0
    assert (out / "round_1" / "sft.jsonl").read_text() == ""
    assert load_run(out / "round_1" / "filtered", allow_empty=True).records == []
    assert head.compare.verdict == "no clear change"


KILLABLE = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from toy_task import GUESS
from agentharness.core.registry import register
from agentharness.agents import ExpertAgent
from agentharness.loop.pipeline import LoopConfig, default_agent_factory, run_loop
register(GUESS)

class SlowExpert(ExpertAgent):
    def policy(self, instance, sample=0):
        inner = super().policy(instance, sample)
        class Slow:
            async def act(self, messages, tools):
                await asyncio.sleep(0.05)
                return await inner.act(messages, tools)
        return Slow()

def factory(kind, opts):
    return SlowExpert() if kind == "expert" else default_agent_factory(kind, opts)

config = LoopConfig.model_validate_json({config!r})
run_loop(config, Path({out!r}), agent_factory=factory, log=lambda m: None)
"""


def test_a_killed_loop_process_resumes_to_complete_outputs(tmp_path: Path) -> None:
    out = tmp_path / "loop"
    config = CONFIG.model_copy(update={"synth_n": 8, "teacher_k": 2})
    script = KILLABLE.format(
        tests=str(Path(__file__).parents[1]), config=config.model_dump_json(), out=str(out)
    )
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    teacher_log = out / "round_1" / "teacher" / "episodes.jsonl"
    try:
        for _ in range(600):  # poll (not a timing assertion): wait for teacher episodes
            if teacher_log.exists() and len(teacher_log.read_bytes().splitlines()) >= 2:
                break
            assert proc.poll() is None, "the loop ended before it could be killed"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert not (out / "round_1" / "teacher.done").exists()

    started: list[str] = []
    run_loop(config, out, hooks=LoopHooks(stage_started=lambda k, s: started.append(s)), log=quiet)
    assert "heldout_before" not in started and started[0] == "teacher"
    teacher = load_run(out / "round_1" / "teacher").records
    synth = read_instances_file(out / "round_1" / "synth.jsonl")
    assert len(teacher) == 2 * len(synth) == len({r.episode_id for r in teacher})
    assert (out / "round_1" / "compare.done").exists()


def test_markers_written_before_stage_results_were_typed_still_resume() -> None:
    """A loop directory from before the typed results: its markers read into the models."""
    from agentharness.loop.filter import FilterSummary
    from agentharness.loop.results import (
        CompareResult,
        EvalResult,
        ExportResult,
        MineResult,
        TrainResult,
    )

    old = {"stage": "x", "round": 1}
    ev = EvalResult.model_validate(
        {
            **old,
            "run": "r",
            "agent": "a",
            "episodes": 2,
            "ran": 2,
            "resumed_past": 0,
            "failed_to_generate": [],
            "mean_reward": None,
            "success_rate": None,
        }
    )
    assert ev.episodes == 2 and ev.mean_reward is None
    assert (
        MineResult.model_validate({**old, "episodes": 2, "failures": 1, "clusters": 1}).failures
        == 1
    )
    assert (
        FilterSummary.model_validate({**old, "input": 2, "kept": 1, "dropped": {"x": 1}}).kept == 1
    )
    assert ExportResult.model_validate({**old, "rows": 0, "file": "f"}).rows == 0
    assert TrainResult.model_validate({**old, "trainer": "none", "trained": False}).model is None
    assert CompareResult.model_validate({**old, "compared": False}).verdict is None
    head = CompareResult.model_validate(
        {
            **old,
            "compared": True,
            "reward_before": 0.1,
            "reward_after": 0.5,
            "delta": 0.4,
            "ci": [0.2, 0.6],
            "verdict": "better",
        }
    )
    assert head.ci == (0.2, 0.6)
