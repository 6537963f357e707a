"""Training set-up (``train.model``): the allocator of training processes
(``keep_freed_memory``), the resident memory the step log reports, and the compute dtype
``auto`` resolves to (``resolve_dtype``)."""

from __future__ import annotations

import ctypes
import resource
import sys

import pytest

from agentharness.train import model as train_model
from agentharness.train.model import (
    keep_freed_memory,
    peak_resident_gb,
    resident_gb,
    resolve_dtype,
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
