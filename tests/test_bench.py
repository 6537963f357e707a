"""Every benchmark under bench/ still parses its command line: ``--help`` runs its imports
and builds its parser (a broken import or a clashing option fails here, not when someone
reproduces a figure in bench/RESULTS.md)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if 'if __name__ == "__main__"' in p.read_text())


def test_the_benchmarks_are_found() -> None:
    assert len(SCRIPTS) >= 20 and (BENCH / "group_setup.py") not in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_parses_its_command_line(
    script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch", reason="the benchmarks need the 'all' extras")
    monkeypatch.syspath_prepend(str(BENCH))  # their shared helpers (group_setup)
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(script), run_name="__main__")
    assert exit_.value.code in (0, None)
    assert "usage:" in capsys.readouterr().out


class _Roller:
    """Plays a 'group' instantly and records which setting was on when it did."""

    def __init__(self, setting: dict[str, str]) -> None:
        self.setting = setting
        self.played: list[str] = []
        self.stats: dict[str, tuple[float, float, float]] = {}

    def play_group(self, instance: object, group: int, seed: int) -> list[object]:
        self.played.append(self.setting["on"])
        n = len(self.played)
        self.stats = {"decode": (10.0 * n, 0.0, 0.5 * n), "read": (2.0, 100.0 * n, 0.1)}
        return [_Rollout([n, n], [1, 0]) for _ in range(group)]


class _Rollout:
    def __init__(self, completion_ids: list[int], env_mask: list[int]) -> None:
        self.completion_ids, self.env_mask = completion_ids, env_mask


def _stub_settings(
    monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]
) -> tuple[_Roller, dict[str, object]]:
    """A stub roller and a switch per setting name, with bench/ importable (group_setup)."""
    pytest.importorskip("torch", reason="group_setup imports the trainer")
    monkeypatch.syspath_prepend(str(BENCH))
    setting = {"on": "none"}
    return _Roller(setting), {m: (lambda m=m: setting.update(on=m)) for m in names}


def test_alternating_rounds_switch_each_setting_on_before_its_play_and_swap_the_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    roller, modes = _stub_settings(monkeypatch, ("a", "b"))
    from group_setup import alternating_rounds

    rounds = list(alternating_rounds(roller, "instance", 3, 3, modes))  # type: ignore[arg-type]
    assert roller.played == ["none", "a", "b", "b", "a", "a", "b"]  # warm-up first, untimed
    assert [(r.round, r.mode) for r in rounds] == [
        (0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b")
    ]  # fmt: skip
    first = rounds[0]
    assert (first.passes, first.pass_ms, first.read_tokens, first.reads) == (20, 50.0, 200, 2)
    assert first.sampled == 3 and first.completion_ids == [[2, 2]] * 3
    assert first.wall >= 0 and "round 0 a:" in first.line(1)


def test_compare_settings_reports_each_setting_against_the_baseline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    roller, modes = _stub_settings(monkeypatch, ("fast", "slow"))
    from group_setup import compare_settings

    args = argparse.Namespace(group=2, rounds=2)
    played = compare_settings(roller, "instance", args, modes, baseline="slow")  # type: ignore[arg-type]
    assert {m: [r.round for r in rounds] for m, rounds in played.items()} == {
        "fast": [0, 1],
        "slow": [0, 1],
    }
    out = capsys.readouterr().out
    # the stub's plays: 50 ms a pass every play; the baseline's summary line is 1.00x
    assert "slow: " in out and "1.00x; 50.0 ms a decoding pass, 1.00x" in out
    assert out.count("ms a decoding pass") == 2
