"""`bootcamp new`: the written package works the moment it is written, and installs."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentharness.cli.main import app
from agentharness.conformance import check_task
from agentharness.core.registry import register
from agentharness.core.task import TaskSpec
from agentharness.sources.scaffold import ScaffoldError, render, write_package

SRC = Path(__file__).resolve().parents[2]


def _import_task(pkg_dir: Path, name: str) -> TaskSpec:
    sys.path.insert(0, str(pkg_dir))
    try:
        module = __import__(f"{name}.task", fromlist=["TASK"])
        return register(module.TASK)
    finally:
        sys.path.remove(str(pkg_dir))


@pytest.mark.parametrize("modality", ["text", "vision"])
def test_new_package_passes_the_check_and_its_own_tests(tmp_path: Path, modality: str) -> None:
    name = f"scaffolded_{modality}"
    result = CliRunner().invoke(
        app, ["new", name, "--modality", modality, "-o", str(tmp_path / name), "--no-install"]
    )
    assert result.exit_code == 0, result.output
    pkg = tmp_path / name
    for f in (
        "config",
        "generator",
        "simulator",
        "tools",
        "interaction",
        "reward",
        "expert",
        "task",
    ):
        text = (pkg / name / f"{f}.py").read_text()
        assert "#<" not in text and "__NAME__" not in text and "__CLASS__" not in text
    assert (pkg / name / "render.py").exists() == (modality == "vision")
    assert f'{name} = "{name}.task:TASK"' in (pkg / "pyproject.toml").read_text()

    spec = _import_task(pkg, name)
    assert spec.id == f"{name}-v1" and spec.modality == modality
    report = check_task(spec)
    assert report.passed, [(r.name, r.detail) for r in report.results if not r.passed]

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC / "src"), str(pkg)])}
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=pkg,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert "4 passed" in tests.stdout


def test_bad_names_and_targets_are_refused(tmp_path: Path) -> None:
    for bad in ("Grid", "2grid", "grid-find", "class"):
        with pytest.raises(ScaffoldError, match="not a valid task name"):
            write_package(bad, tmp_path / "x")
    with pytest.raises(ScaffoldError, match="already registered"):
        write_package("thermal", tmp_path / "x")
    with pytest.raises(ScaffoldError, match="shadow"):
        write_package("json", tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(ScaffoldError, match="not empty"):
        write_package("grid_ok", tmp_path / "full")
    result = CliRunner().invoke(app, ["new", "Bad-Name", "--no-install", "-o", str(tmp_path / "y")])
    assert result.exit_code == 2 and "not a valid task name" in result.output
    assert not (tmp_path / "y").exists()


def test_comments_show_where_the_domain_goes() -> None:
    files = render("grid_doc", "text")
    for layer in ("simulator", "generator", "tools", "interaction", "reward", "expert", "config"):
        assert "DOMAIN:" in files[f"grid_doc/{layer}.py"], layer


@pytest.mark.slow
def test_two_commands_in_a_clean_venv(tmp_path: Path) -> None:
    """A fresh venv gets agentharness built from this checkout (offline); then `bootcamp new`
    (which installs the package as a plugin) and `bootcamp eval` are all a newcomer runs.

    Dependencies come from this environment's site-packages through a path file (a path
    line adds no site dir, so this environment's own agentharness is not importable).
    """
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # The venv's bundled setuptools is older than our build needs; use ours (offline).
    subprocess.run([py, "-m", "pip", "uninstall", "-q", "-y", "setuptools"], timeout=300)
    pip = [py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run([*pip, str(SRC)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [py, "-c", "import agentharness; print(agentharness.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert where.startswith(site), where  # the venv's own agentharness, not this checkout's

    bootcamp = str(venv / "bin" / "bootcamp")
    pkg = tmp_path / "grid_plugin"

    def run(*args: str, cwd: Path = tmp_path) -> str:
        out = subprocess.run([*args], capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        return out.stdout

    # The two commands (templates ship as package data of the built wheel).
    assert "installed grid_plugin" in run(bootcamp, "new", "grid_plugin", "-o", str(pkg))
    run(
        bootcamp,
        "eval",
        "--agent",
        "expert",
        "--tasks",
        "grid_plugin",
        "-n",
        "2",
        "--quiet",
        "--out",
        str(tmp_path / "run"),
    )
    assert (tmp_path / "run" / "episodes.jsonl").read_text().count("\n") == 2
    assert "grid_plugin-v1" in run(bootcamp, "tasks")
    assert "PASS grid_plugin-v1" in run(bootcamp, "check", "grid_plugin")
    run(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=pkg)


def test_the_next_steps_say_when_pytest_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick start's venv has no pytest: the printed next step says to install it."""
    import importlib.util

    args = ["new", "nextsteps", "--no-install", "-o"]
    result = CliRunner().invoke(app, [*args, str(tmp_path / "a")])
    assert "python -m pytest -q" in result.output and "pip install pytest" not in result.output
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pytest" else real(name, *a)
    )
    result = CliRunner().invoke(app, [*args, str(tmp_path / "b")])
    assert result.exit_code == 0 and "(after: pip install pytest)" in result.output
