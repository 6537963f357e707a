"""Training set-up (``train.model``): the allocator of training processes
(``keep_freed_memory``), the resident memory the step log reports, the compute dtype
``auto`` resolves to (``resolve_dtype``), the checkpoint ``--resume`` continues from and the
JSON files the trainers write."""

from __future__ import annotations

import ctypes
import json
import resource
import sys
from pathlib import Path

import pytest

from agentharness.train import TrainInputError
from agentharness.train import model as train_model
from agentharness.train.model import (
    available_memory_bytes,
    free_heap_bytes,
    keep_freed_memory,
    peak_resident_gb,
    resident_gb,
    resolve_dtype,
    resume_checkpoint,
    write_json,
)

BLOCK = 96 << 20  # above glibc's largest mmap threshold (32 MB): mmap'd by default


def faults_to_reuse_a_block(libc: ctypes.CDLL) -> int:
    """Minor page faults while a freed block of BLOCK bytes is allocated and written again."""
    malloc, free = libc.malloc, libc.free
    malloc.argtypes, malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    free.argtypes, free.restype = [ctypes.c_void_p], None
    first = malloc(BLOCK)
    ctypes.memset(first, 1, BLOCK)
    free(first)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    again = malloc(BLOCK)
    ctypes.memset(again, 2, BLOCK)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    free(again)
    return after - before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_freed_training_memory_is_reused_without_faulting_it_in_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AGENTHARNESS_MALLOC", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "gnu_get_libc_version"):
        pytest.skip("not glibc")
    assert keep_freed_memory()
    # Unmapped and mapped again, the block would fault in every one of its 4 KiB pages.
    assert faults_to_reuse_a_block(libc) < BLOCK // 4096 // 10


def test_the_users_allocator_settings_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTHARNESS_MALLOC", "system")
    assert not keep_freed_memory()
    monkeypatch.delenv("AGENTHARNESS_MALLOC")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536")
    assert not keep_freed_memory()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_resident_memory_grows_with_what_the_process_touches() -> None:
    import numpy as np

    before = resident_gb()
    peak = peak_resident_gb()
    assert before is not None and peak is not None and 0 < before <= peak + 0.01
    # 512 MiB, every page touched (less may be new: freed memory the heap kept is reused)
    block = np.ones(512 << 20, dtype=np.uint8)
    assert resident_gb() >= before + 0.3  # type: ignore[operator]
    assert peak_resident_gb() >= before + 0.3  # type: ignore[operator]
    del block


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc, /proc")
def test_memory_a_training_pass_can_use_counts_what_the_heap_keeps_freed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A freed block the heap keeps (``keep_freed_memory``) is memory this process can
    reuse that the system no longer counts as available: ``free_heap_bytes`` counts it."""
    import numpy as np

    monkeypatch.delenv("AGENTHARNESS_MALLOC", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    if not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("glibc before 2.33")
    assert keep_freed_memory()
    available = available_memory_bytes()
    assert available is not None and available > 0
    block = np.ones(BLOCK, dtype=np.uint8)
    while_held = free_heap_bytes()
    del block
    assert free_heap_bytes() >= while_held + BLOCK * 0.9


def test_a_memory_cgroup_limits_the_memory_available(tmp_path: Path) -> None:
    """In a container the system's MemAvailable is the host's: the room a memory cgroup
    leaves (its limit minus its usage, the tightest of it and its parents; cgroup v1 and
    v2) is what the process can get."""
    root = tmp_path / "cgroup"
    membership = tmp_path / "membership"

    def group(path: str, limit: str, usage: int, v1: bool = False) -> None:
        directory = root / ("memory" if v1 else "") / path
        directory.mkdir(parents=True, exist_ok=True)
        names = (
            ("memory.limit_in_bytes", "memory.usage_in_bytes")
            if v1
            else ("memory.max", "memory.current")
        )
        (directory / names[0]).write_text(limit + "\n")
        (directory / names[1]).write_text(f"{usage}\n")

    # v2: the job's group has no limit of its own; its parent allows 8 GiB and uses 3
    membership.write_text("0::/jobs/run7\n")
    group("jobs/run7", "max", 2 << 30)
    group("jobs", str(8 << 30), 3 << 30)
    assert train_model.cgroup_room_bytes(root, membership) == 5 << 30
    # v1 beside v2 (a hybrid mount): the memory controller's own group counts too
    membership.write_text("4:memory:/box\n0::/jobs/run7\n")
    group("box", str(4 << 30), 1 << 30, v1=True)
    assert train_model.cgroup_room_bytes(root, membership) == 3 << 30
    # limits too large to be limits, unreadable lines and missing groups: no limit
    membership.write_text("garbage\n4:memory:/free\n0::/nowhere\n")
    group("free", "9223372036854771712", 1 << 30, v1=True)
    assert train_model.cgroup_room_bytes(root, membership) is None
    assert train_model.cgroup_room_bytes(root, tmp_path / "absent") is None


@pytest.mark.parametrize("fast", [True, False])
def test_auto_is_bfloat16_only_where_it_is_fast(
    monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    monkeypatch.setattr(train_model, "fast_bfloat16", lambda: fast)
    assert resolve_dtype("auto") == ("bfloat16" if fast else "float32")
    assert resolve_dtype("float32") == "float32" and resolve_dtype("bfloat16") == "bfloat16"
    args = train_model.shared_training_args(0, train_dtype="auto")
    assert args["bf16"] is fast or args["use_cpu"] is False


def test_a_dtype_that_is_not_offered_is_refused() -> None:
    with pytest.raises(ValueError, match="train_dtype 'fp16': choose auto, float32, bfloat16"):
        resolve_dtype("fp16", "train_dtype")


def checkpoint(trainer: Path, step: int, state: str | None) -> Path:
    """A checkpoint directory; ``state`` is its trainer_state.json text (None: not written)."""
    path = trainer / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_bytes(b"\0" * 64)
    if state is not None:
        (path / "trainer_state.json").write_text(state)
    return path


def test_resume_skips_the_checkpoints_a_run_stopped_while_saving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resume_checkpoint(tmp_path, resume=False) is None
    with pytest.raises(TrainInputError, match="no checkpoint under"):
        resume_checkpoint(tmp_path, resume=True)
    checkpoint(tmp_path, 2, json.dumps({"global_step": 2}))
    checkpoint(tmp_path, 10, json.dumps({"global_step": 10}))  # by number, not by name
    assert resume_checkpoint(tmp_path, resume=True) == str(tmp_path / "checkpoint-10")
    assert capsys.readouterr().err == ""
    checkpoint(tmp_path, 11, None)  # stopped before its state was written
    checkpoint(tmp_path, 12, '{"global_step": 1')  # stopped while writing it
    assert resume_checkpoint(tmp_path, resume=True) == str(tmp_path / "checkpoint-10")
    note = capsys.readouterr().err
    assert "skipping checkpoint-12, checkpoint-11" in note and "from checkpoint-10" in note


def test_resume_refuses_when_no_checkpoint_is_complete(tmp_path: Path) -> None:
    checkpoint(tmp_path, 1, None)
    checkpoint(tmp_path, 2, "[]")
    with pytest.raises(TrainInputError, match=r"no complete checkpoint.*without --resume"):
        resume_checkpoint(tmp_path, resume=True)


def test_a_json_file_is_written_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run" / "train_summary.json"
    write_json(path, {"steps": 1})

    def stopped(*args: object) -> None:  # the run ends after writing, before the rename
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.replace", stopped)
    with pytest.raises(OSError, match="No space left"):
        write_json(path, {"steps": 2, "losses": [1.0, 0.5]})
    monkeypatch.undo()
    assert json.loads(path.read_text()) == {"steps": 1}  # the old file, whole
    assert [p.name for p in path.parent.iterdir()] == ["train_summary.json"]
    write_json(path, {"steps": 2})
    assert json.loads(path.read_text()) == {"steps": 2}


def test_a_saved_model_replaces_the_old_one_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save stopped half-way (here: the tokenizer fails) leaves the earlier model as it was
    and no half-written directory a re-run would take for a finished one."""
    from tiny_lm import tiny_model, tiny_tokenizer

    from agentharness.train.model import save_final

    tok = tiny_tokenizer()
    final = tmp_path / "models" / "final"
    save_final(tiny_model(tok, seed=0), tok, final)
    first = (final / "model.safetensors").read_bytes()

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(type(tok), "save_pretrained", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_final(tiny_model(tok, seed=1), tok, final)
    monkeypatch.undo()
    assert (final / "model.safetensors").read_bytes() == first
    assert [p.name for p in final.parent.iterdir()] == ["final"]
    save_final(tiny_model(tok, seed=1), tok, final)  # a finished save replaces it
    assert (final / "model.safetensors").read_bytes() != first
    assert (final / "tokenizer.json").exists()
    assert [p.name for p in final.parent.iterdir()] == ["final"]
