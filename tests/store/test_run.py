from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import pytest

from agentharness import make
from agentharness.agents.scripted import ExpertAgent
from agentharness.core.messages import Message, ToolCall
from agentharness.rollout.runner import run_one
from agentharness.store import CorruptLineWarning, EpisodeRecord, RunDir, RunDirError, Timings


def _record(seed: int = 1, with_image: bool = False) -> EpisodeRecord:
    ep = make("guess").reset(seed=seed)
    if with_image:
        ep.step(Message(role="assistant", tool_calls=[ToolCall.make("p", "picture", {})]))
    inst = ep.instance
    finished, timings = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    if with_image:
        finished.messages[2:2] = ep.messages[2:]
    return EpisodeRecord.from_episode(finished, agent="expert", sample=0, timings=timings)


def test_round_trip_with_images(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.create({"command": "test"})
    record = _record(with_image=True)
    run.append(record)
    line = run.episodes_path.read_text()
    assert "data:image/png" not in line and "file:images/" in line
    assert len(list((tmp_path / "run" / "images").iterdir())) == 1
    (back,) = run.episodes(resolve_images=True)
    assert back == record
    (stored,) = run.episodes()
    part = stored.messages[4].images[0]
    assert run.image_path(part).read_bytes().startswith(b"\x89PNG")


def test_truncated_last_line_is_skipped_then_repaired(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.create({})
    run.append(_record(1))
    run.append(_record(2))
    data = run.episodes_path.read_bytes()
    run.episodes_path.write_bytes(data[: len(data) - 40])  # crash mid-write
    with pytest.warns(CorruptLineWarning, match="corrupt or truncated"):
        records = list(run.episodes())
    assert [r.seed for r in records] == [1]
    with pytest.warns(CorruptLineWarning, match="truncated last line"):
        run.create({})  # resume repairs the tail
    run.append(_record(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r.seed for r in run.episodes()] == [1, 3]
    assert len(json.loads(run.path.joinpath("run.json").read_text())["invocations"]) == 2


def test_foreign_and_missing_directories(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="does not exist"):
        list(RunDir(tmp_path / "nope").episodes())
    with pytest.raises(RunDirError, match="not a run directory"):
        list(RunDir(tmp_path).episodes())
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(RunDirError, match="not a directory"):
        list(RunDir(f).episodes())


def test_newer_schema_is_rejected_and_junk_lines_skipped(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.create({})
    record = _record()
    data = record.model_dump(mode="json")
    with open(run.episodes_path, "a") as f:
        f.write(json.dumps({"hello": "world"}) + "\n")
    with pytest.warns(CorruptLineWarning, match="not an episode record"):
        assert list(run.episodes()) == []
    with open(run.episodes_path, "a") as f:
        f.write(json.dumps({**data, "schema_version": 99}) + "\n")
    with pytest.raises(RunDirError, match="upgrade"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        list(run.episodes())


def test_timings_and_ids() -> None:
    record = _record()
    assert record.episode_id.endswith("#0@expert")
    assert isinstance(record.timings, Timings) and record.timings.wall_s >= 0


@pytest.mark.parametrize(
    "ref", ["file:../../secret.png", "file:/etc/hostname", "file:images", "file:images/none.png"]
)
def test_image_references_never_leave_the_run(tmp_path: Path, ref: str) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG top secret")
    run = RunDir(tmp_path / "a" / "run")
    run.create({"command": "test"})
    run.append(_record(seed=2))
    run.append(_record(seed=3, with_image=True))
    line = run.episodes_path.read_text().splitlines()[1]
    stored = line.split('"file:', 1)[1].split('"', 1)[0]
    tampered = line.replace(f"file:{stored}", ref)
    run.episodes_path.write_text(run.episodes_path.read_text().replace(line, tampered))
    with pytest.warns(CorruptLineWarning, match=r"skipped episode .*guess-v1:3") as caught:
        kept = list(run.episodes(resolve_images=True))
    assert [r.seed for r in kept] == [2]
    assert "outside" in str(caught[0].message) or "names no file" in str(caught[0].message)
    (bad,) = [r for r in run.episodes() if r.seed == 3]
    with pytest.raises(RunDirError):
        run.image_path(bad.messages[4].images[0])


def test_export_of_a_tampered_run_copies_nothing_from_outside(tmp_path: Path) -> None:
    from agentharness.export.sft import export_sft

    (tmp_path / "secret.png").write_bytes(b"\x89PNG top secret")
    run = RunDir(tmp_path / "run")
    run.create({"command": "test"})
    run.append(_record(seed=2))
    run.append(_record(seed=3, with_image=True))
    text = run.episodes_path.read_text()
    stored = text.split('"file:', 1)[1].split('"', 1)[0]
    run.episodes_path.write_text(text.replace(f"file:{stored}", "file:../secret.png"))
    out = tmp_path / "out" / "sft.jsonl"
    with pytest.warns(CorruptLineWarning):
        assert export_sft([run.path], out) == 1
    assert not any(
        p.read_bytes() == b"\x89PNG top secret"
        for p in (tmp_path / "out").rglob("*")
        if p.is_file()
    )


def test_corrupt_logs_give_one_line_and_what_can_be_read(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.create({"command": "test"})
    run.append(_record(seed=2))
    with open(run.episodes_path, "ab") as f:
        f.write(b"\xff\xfe not utf-8\n" + b"[" * 100_000 + b"\n")
    run.append(_record(seed=3))
    with pytest.warns(CorruptLineWarning) as caught:
        assert [r.seed for r in run.episodes()] == [2, 3]
    assert ["not UTF-8" in str(w.message) for w in caught] == [True, False]
    assert len(run.done_ids()) == 2
    (run.path / "run.json").write_text('{"trunc')
    with pytest.raises(RunDirError, match=r"unreadable.*repair or delete it"):
        run.run_info()
    (run.path / "run.json").write_text("[1, 2]")
    with pytest.raises(RunDirError, match="holds list"):
        run.create({"command": "again"})
    other = RunDir(tmp_path / "dir_in_place")
    (other.path / "episodes.jsonl").mkdir(parents=True)
    with pytest.raises(RunDirError, match="is not a file"):
        list(other.episodes())


def test_instance_equality_ignores_its_typed_views() -> None:
    from pydantic import BaseModel

    class Public(BaseModel):
        high: int

    instance = make("guess").reset(seed=4).instance
    again = type(instance).model_validate_json(instance.model_dump_json())
    assert instance.public_as(Public).high == instance.public["high"]
    assert instance == again and hash(instance) == hash(again)


def test_non_finite_floats_and_batches_round_trip(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.create({"command": "test"})
    plain = _record(seed=1)
    call = plain.tool_calls[0].model_copy(update={"metrics": {"nan": float("nan"), "inf": 1e400}})
    odd = _record(seed=2).model_copy(update={"tool_calls": [call], "step_rewards": [float("-inf")]})
    run.append_encoded([RunDir.encode(plain), RunDir.encode(odd)])  # one flush for both
    first, second = run.episodes()
    assert first == plain
    metrics = second.tool_calls[0].metrics
    assert metrics["nan"] != metrics["nan"] and metrics["inf"] == float("inf")
    assert second.step_rewards == [float("-inf")]


def test_atomic_writes_replace_files_and_write_through_streams(tmp_path: Path) -> None:
    from agentharness.store.run import atomic_write_text

    path = tmp_path / "run.json"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two")
    assert path.read_text() == "two"
    stream = tmp_path / "stdout"
    stream.symlink_to("/dev/null")  # as `-o /dev/stdout` is: renaming over it would replace it
    atomic_write_text(stream, "three")
    assert stream.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [
        "run.json",
        "stdout",
    ]


def test_content_fingerprint_follows_content_not_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentharness.store import run as store_run
    from agentharness.store.run import content_fingerprint

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "weights.bin").write_bytes(bytes(range(256)) * 64)
    (model / "checkpoints").mkdir()  # subdirectories are not the model
    digest = content_fingerprint(model)
    assert digest is not None and digest.startswith("sha256:")
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in ("config.json", "weights.bin"):
        (copy / f).write_bytes((model / f).read_bytes())
    assert content_fingerprint(copy) == digest  # another path, the same model
    (model / "checkpoints" / "x").write_text("later")
    assert content_fingerprint(model) == digest
    (copy / "weights.bin").write_bytes(bytes(range(255, -1, -1)) * 64)  # retrained in place
    assert content_fingerprint(copy) != digest
    assert content_fingerprint(tmp_path / "missing") is None and content_fingerprint(None) is None
    # A big file is read in blocks spread over it; a change inside any block is seen.
    monkeypatch.setattr(store_run, "SAMPLED_ABOVE", 1000)
    monkeypatch.setattr(store_run, "SAMPLE_BLOCKS", 4)
    monkeypatch.setattr(store_run, "SAMPLE_BLOCK", 100)
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(5000))
    before = content_fingerprint(big)
    for where in (0, 1700, 4999):  # the first, the second and the last block
        data = bytearray(5000)
        data[where] = 1
        big.write_bytes(bytes(data))
        assert content_fingerprint(big) != before, where
