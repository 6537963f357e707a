"""The allocator a GRPO process restarts itself under (``agentharness.train.allocator``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentharness.train import TrainInputError
from agentharness.train.allocator import (
    chosen_allocator,
    mimalloc_environment,
    mimalloc_library,
    mimalloc_loaded,
)

LIBRARY = Path("/opt/lib/libmimalloc.so")


def test_the_variable_chooses_and_a_bad_value_says_what_to_choose() -> None:
    assert chosen_allocator({}) == "mimalloc"
    assert chosen_allocator({"AGENTHARNESS_MALLOC": " glibc "}) == "glibc"
    with pytest.raises(TrainInputError, match="choose one of mimalloc, glibc, system"):
        chosen_allocator({"AGENTHARNESS_MALLOC": "jemalloc"})


def test_the_restart_environment_preloads_mimalloc_once() -> None:
    env = mimalloc_environment({"PATH": "/bin", "LD_PRELOAD": "/x/libfoo.so"}, LIBRARY, "linux")
    assert env is not None and env["PATH"] == "/bin"
    assert env["LD_PRELOAD"] == f"{LIBRARY} /x/libfoo.so"  # the user's preloads stay
    assert mimalloc_environment(env, LIBRARY, "linux") is None  # the restarted process
    assert mimalloc_environment({"LD_PRELOAD": str(LIBRARY)}, LIBRARY, "linux") is None


@pytest.mark.parametrize(
    ("environ", "library", "platform"),
    [
        ({"AGENTHARNESS_MALLOC": "glibc"}, LIBRARY, "linux"),
        ({"AGENTHARNESS_MALLOC": "system"}, LIBRARY, "linux"),
        ({}, None, "linux"),  # not installed: glibc
        ({}, LIBRARY, "darwin"),
    ],
)
def test_no_restart_where_it_does_not_apply(
    environ: dict[str, str], library: Path | None, platform: str
) -> None:
    assert mimalloc_environment(environ, library, platform) is None


def allocator_of_a_process(**env: str) -> str:
    """The allocator a fresh Python process runs under after asking to restart."""
    code = (
        "from agentharness.train.allocator import restart_under_mimalloc, running_allocator\n"
        "restart_under_mimalloc()\n"
        "print(running_allocator())\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTHARNESS_MALLOC")}
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.skipif(
    mimalloc_library() is None, reason="mimalloc comes with the 'train' extra on Linux x86-64"
)
def test_a_process_restarts_under_mimalloc_unless_told_otherwise() -> None:
    assert allocator_of_a_process() == "mimalloc"
    assert allocator_of_a_process(AGENTHARNESS_MALLOC="glibc") == "glibc"
    assert allocator_of_a_process(AGENTHARNESS_MALLOC="system") == "system"
    assert not mimalloc_loaded()  # this process was never restarted


def test_bootcamp_train_grpo_refuses_an_unknown_allocator() -> None:
    bootcamp = Path(sys.executable).with_name("bootcamp")
    out = subprocess.run(
        [str(bootcamp), "train", "grpo", "--help"],
        env={**os.environ, "AGENTHARNESS_MALLOC": "tcmalloc"},
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "AGENTHARNESS_MALLOC='tcmalloc': choose one of mimalloc, glibc, system" in out.stderr
