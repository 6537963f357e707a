"""The README's commands run as written, scaled down: a newcomer following it line by line
gets output from every step.

The bash blocks of "Using it", "The loop" and the TRL export are read from README.md itself,
so a command that drifts from the CLI breaks this test. Only sizes shrink (``-n``, ``-k``,
``--rounds``, ``--tasks all``); commands that need a model, a browser or a long run
(``--agent local``, ``view``, ``check all``, ``new``) are covered by their own tests.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentharness.cli.main import app

README = Path(__file__).resolve().parent.parent / "README.md"

SKIP = (
    "bootcamp view",  # a server that runs until stopped (tests/view)
    "bootcamp check all",  # every task's check: test_conformance.py
    "bootcamp new",  # pip-installs a package (tests/sources/test_scaffold.py)
    "--agent local",  # a real model (tests/agents)
)
# Smaller sizes, same commands: option -> value.
SHRINK = {"-n": "4", "-k": "2", "--rounds": "1", "--tasks all": "--tasks thermal,tsp_vision"}


def bash_block(after: str) -> list[str]:
    """The commands of the first ```bash block after the line starting with ``after``:
    continuation lines joined, comments and ``[optional]`` notation dropped."""
    text = README.read_text()
    start = text.index("\n" + after)
    block = re.search(r"```bash\n(.*?)```", text[start:], flags=re.S)
    assert block, f"no bash block after {after!r}"
    joined = block.group(1).replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"\s\[[^\]]*\]", "", line)  # `[--json]`: optional flags, not typed
        words = shlex.split(line, comments=True)
        if words:
            commands.append(" ".join(shlex.quote(w) for w in words))
    return commands


def shrink(command: str) -> list[str]:
    command = command.replace("--tasks all", SHRINK["--tasks all"])
    words = shlex.split(command)
    for i, word in enumerate(words[:-1]):
        if word in SHRINK and words[i + 1].isdigit():
            words[i + 1] = SHRINK[word]
    if words[:2] == ["bootcamp", "loop"]:
        words += ["-n", "3", "--synth-n", "2"]
    return words


def test_the_readme_commands_each_produce_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")  # export rl --format verl
    pytest.importorskip("matplotlib")  # report --html
    pytest.importorskip("inspect_ai")  # export inspect
    monkeypatch.chdir(tmp_path)
    commands = (
        bash_block("## Using it")
        + bash_block("### The loop")
        + bash_block("TRL's own multi-turn loop")
    )
    ran = []
    for command in commands:
        assert command.startswith("bootcamp "), command
        if any(skip in command for skip in SKIP):
            continue
        args = shrink(command)[1:]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, f"{command}\n{result.output}"
        assert result.output.strip(), f"no output from: {command}"
        ran.append(args[0] if args[0] != "export" else f"export {args[1]}")
    assert {"tasks", "show", "generate", "eval", "report", "mine", "synth", "filter"} <= set(ran)
    assert {"export sft", "export rl", "export groups", "export inspect", "compare", "loop"} <= set(
        ran
    )
    # What the commands wrote is where the README says.
    for path in ("held_out.jsonl", "synth.jsonl", "sft.jsonl", "mixed.text.jsonl", "rl.parquet"):
        assert (tmp_path / path).stat().st_size > 0, path
    for path in ("rl.tools.yaml", "groups.jsonl", "logs/noisy.eval", "report.html", "er.jsonl"):
        assert (tmp_path / path).exists(), path
    assert (tmp_path / "runs/loop/summary.json").exists()


def test_the_in_python_snippet_pastes_into_the_interactive_interpreter(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Pasted line by line into ``python`` (the classic REPL, where a statement after an
    indented block needs a blank line first), the snippet runs without an error."""
    import code

    text = README.read_text()
    start = text.index("\n### In Python")
    snippet = re.search(r"```python\n(.*?)```", text[start:], flags=re.S)
    assert snippet
    errors: list[str] = []

    class Console(code.InteractiveConsole):
        def showsyntaxerror(self, filename: str | None = None, **kwargs: object) -> None:
            errors.append("SyntaxError")

        def showtraceback(self) -> None:
            import traceback

            errors.append(traceback.format_exc())

    console = Console()
    for line in [*snippet.group(1).splitlines(), ""]:
        console.push(line)
    assert not errors, errors
    out = capsys.readouterr().out
    assert "Reward(" in out or "total=" in out, out[-500:]
