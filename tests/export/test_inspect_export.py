"""The inspect_ai log export, read back with inspect_ai's own log reader."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log  # the test extra installs inspect_ai

from agentharness import get_task, make
from agentharness.core.messages import ToolCall, assistant
from agentharness.export.common import ExportError
from agentharness.export.inspect_log import export_inspect
from agentharness.store import EpisodeRecord, RunDir, Timings
from agentharness.store.run import RunDirError


@pytest.fixture(scope="module")
def marked_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One guess episode with a text-written call, a format error, a nudge and a tool error."""
    ep = make("guess", difficulty="easy").reset(seed=5)
    ep.step('<tool_call>{"name": "probe", "arguments": {"guess": 5}}</tool_call>')
    ep.step("<tool_call>{oops</tool_call>")
    ep.step("Thinking aloud.")
    ep.step(assistant(tool_calls=[ToolCall.make("bad", "probe", {"guess": 0})]))
    ep.step(assistant("Final.", [ToolCall.make("fin", "answer", {"number": 5})]))
    record = EpisodeRecord.from_episode(
        ep, agent="scripted", sample=0, timings=Timings(started_at=time.time(), wall_s=1.5)
    )
    path = tmp_path_factory.mktemp("marked") / "run"
    run = RunDir(path)
    run.create({"command": "test"})
    run.append(record)
    return path


def test_the_log_reads_back_with_samples_messages_calls_and_scores(
    marked_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "logs" / "run.eval"
    assert export_inspect([marked_run], out) == 1
    log = read_eval_log(str(out))
    assert log.status == "success" and log.eval.task == get_task("guess").id
    assert log.eval.model == "agentharness/scripted"
    (sample,) = log.samples or []
    (record,) = RunDir(marked_run).episodes()
    assert sample.id == record.episode_id and sample.epoch == 1
    roles = [m.role for m in sample.messages]
    assert roles == [m.role for m in record.messages]
    assert [m.role for m in sample.input] == ["system", "user"]  # type: ignore[union-attr]

    assistants = [m for m in sample.messages if m.role == "assistant"]
    # The call written as text shows as a call, like the native ones.
    assert [(c.function, c.arguments) for c in assistants[0].tool_calls or []] == [
        ("probe", {"guess": 5})
    ]
    assert assistants[-1].text == "Final." and assistants[-1].tool_calls[0].function == "answer"  # type: ignore[index]
    tools = [m for m in sample.messages if m.role == "tool"]
    assert [t.function for t in tools] == ["probe", "probe", "answer"]  # type: ignore[union-attr]
    assert [t.error is not None for t in tools] == [False, True, False]  # type: ignore[union-attr]
    kinds = [(m.metadata or {}).get("kind") for m in sample.messages if m.role == "user"]
    assert kinds == [None, "format-error", "nudge"]

    reward = sample.scores["reward"]  # type: ignore[index]
    assert reward.value == pytest.approx(record.reward.total)
    assert reward.explanation == record.reward.explanation
    meta = reward.metadata or {}
    assert meta["success"] is record.reward.success and meta["end_reason"] == record.end_reason
    assert [c["name"] for c in meta["components"]] == [c.name for c in record.reward.components]
    assert sample.scores["success"].value == float(record.reward.success)  # type: ignore[index]
    assert sample.metadata["format_errors"] == 1 and sample.metadata["nudges"] == 1
    assert sample.total_time == pytest.approx(1.5)
    (score, _) = log.results.scores  # type: ignore[union-attr]
    assert score.name == "reward" and score.metrics["mean"].value == pytest.approx(
        record.reward.total
    )


def test_images_are_inline_and_json_logs_work_too(vision_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "vision.json"
    n = export_inspect([vision_run], out)
    log = read_eval_log(str(out))
    assert len(log.samples or []) == n == len(list(RunDir(vision_run).episodes()))
    images = [
        c
        for s in log.samples or []
        for m in s.messages
        if isinstance(m.content, list)
        for c in m.content
        if c.type == "image"
    ]
    assert images and all(i.image.startswith("data:image/png;base64,") for i in images)


def test_bad_output_names_and_runs_are_clear_errors(marked_run: Path, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"end in \.eval or \.json"):
        export_inspect([marked_run], tmp_path / "log.txt")
    with pytest.raises(RunDirError, match="does not exist"):
        export_inspect([tmp_path / "missing"], tmp_path / "log.eval")
    assert not (tmp_path / "log.eval").exists()
