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
