"""The allocator a training process restarts itself under (``agentharness.train.allocator``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentharness.train import TrainInputError
from agentharness.train.allocator import (
    MIMALLOC_SETTINGS,
    chosen_allocator,
    keeps_freed_pages,
    mimalloc_environment,
    mimalloc_library,
    mimalloc_loaded,
)

LIBRARY = Path("/opt/lib/libmimalloc.so")
KEEP_PAGES = {"MIMALLOC_PURGE_DELAY": "-1"}


def test_the_variable_chooses_and_a_bad_value_says_what_to_choose() -> None:
    assert chosen_allocator({}) == "mimalloc"
    assert chosen_allocator({"AGENTHARNESS_MALLOC": " glibc "}) == "glibc"
    with pytest.raises(TrainInputError, match="choose one of mimalloc, glibc, system"):
        chosen_allocator({"AGENTHARNESS_MALLOC": "jemalloc"})


def test_the_restart_environment_preloads_mimalloc_once() -> None:
    environ = {"PATH": "/bin", "LD_PRELOAD": "/x/libfoo.so"}
    env = mimalloc_environment(environ, LIBRARY, "linux", KEEP_PAGES)
    assert env is not None and env["PATH"] == "/bin"
    assert env["LD_PRELOAD"] == f"{LIBRARY} /x/libfoo.so"  # the user's preloads stay
    assert env["MIMALLOC_PURGE_DELAY"] == "-1"  # the command's mimalloc options
    assert mimalloc_environment(env, LIBRARY, "linux") is None  # the restarted process
    assert mimalloc_environment({"LD_PRELOAD": str(LIBRARY)}, LIBRARY, "linux") is None


def test_the_users_own_mimalloc_options_win() -> None:
    env = mimalloc_environment({"MIMALLOC_PURGE_DELAY": "10"}, LIBRARY, "linux", KEEP_PAGES)
    assert env is not None and env["MIMALLOC_PURGE_DELAY"] == "10"


def test_training_commands_keep_freed_pages() -> None:
    """Kept pages are reused by SFT's repeated steps and by GRPO's, whose resident size levels
    off over a whole stage (the module's docstring)."""
    assert MIMALLOC_SETTINGS[("train", "sft")] == KEEP_PAGES
    assert MIMALLOC_SETTINGS[("train", "grpo")] == KEEP_PAGES


def test_kept_pages_are_mimallocs_with_a_negative_purge_delay(monkeypatch: Any) -> None:
    from agentharness.train import allocator

    monkeypatch.setattr(allocator, "mimalloc_loaded", lambda: True)
    assert keeps_freed_pages(KEEP_PAGES)
    for purging in ({}, {"MIMALLOC_PURGE_DELAY": "10"}, {"MIMALLOC_PURGE_DELAY": "0"}):
        assert not keeps_freed_pages(purging)
    assert not keeps_freed_pages({"MIMALLOC_PURGE_DELAY": "never"})
    monkeypatch.setattr(allocator, "mimalloc_loaded", lambda: False)
    assert not keeps_freed_pages(KEEP_PAGES)  # glibc, whatever mimalloc's options say


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
    """The allocator a fresh Python process runs under after asking to restart with SFT's
    options, its purge delay and whether it keeps freed pages."""
    code = (
        "from agentharness.train.allocator import restart_under_mimalloc, running_allocator\n"
        "from agentharness.train.allocator import keeps_freed_pages\n"
        f"restart_under_mimalloc({KEEP_PAGES!r})\n"
        "import os\n"
        "print(running_allocator(), os.environ.get('MIMALLOC_PURGE_DELAY'), keeps_freed_pages())\n"
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENTHARNESS_MALLOC", "MIMALLOC_"))
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.skipif(
    mimalloc_library() is None, reason="mimalloc comes with the 'train' extra on Linux x86-64"
)
def test_a_process_restarts_under_mimalloc_unless_told_otherwise() -> None:
    assert allocator_of_a_process() == "mimalloc -1 True"
    assert allocator_of_a_process(MIMALLOC_PURGE_DELAY="10") == "mimalloc 10 False"
    assert allocator_of_a_process(AGENTHARNESS_MALLOC="glibc") == "glibc None False"
    assert allocator_of_a_process(AGENTHARNESS_MALLOC="system") == "system None False"
    assert not mimalloc_loaded()  # this process was never restarted


@pytest.mark.parametrize("command", ["sft", "grpo"])
def test_bootcamp_train_refuses_an_unknown_allocator(command: str) -> None:
    bootcamp = Path(sys.executable).with_name("bootcamp")
    out = subprocess.run(
        [str(bootcamp), "train", command, "--help"],
        env={**os.environ, "AGENTHARNESS_MALLOC": "tcmalloc"},
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "AGENTHARNESS_MALLOC='tcmalloc': choose one of mimalloc, glibc, system" in out.stderr
