"""The allocator set-up of training processes (``train.model.keep_freed_memory``)."""

from __future__ import annotations

import ctypes
import resource
import sys

import pytest

from agentharness.train.model import keep_freed_memory

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
