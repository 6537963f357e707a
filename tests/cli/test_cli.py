from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agentharness.cli.main import app
from agentharness.core.registry import get_task
from agentharness.store.summary import RunSummary

runner = CliRunner()


def invoke(*args: str) -> object:
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_tasks_json_lists_every_task_with_contract_fields() -> None:
    result = invoke("tasks", "--json")
    rows = json.loads(result.output)
    assert {"guess-v1", get_task("tsp_vision").id} <= {r["id"] for r in rows}
    for row in rows:
        assert set(row) == {"id", "modality", "difficulties", "description"}
        assert row["modality"] in ("text", "vision")


def test_show_prints_prompt_and_saves_images(tmp_path: Path) -> None:
    result = invoke(
        "show", "tsp_vision", "--seed", "2", "--difficulty", "easy", "--images-dir", str(tmp_path)
    )
    assert result.exit_code == 0
    assert "submit_tour" in result.output
    (png,) = tmp_path.glob("*.png")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_generate_writes_instances(tmp_path: Path) -> None:
    out = tmp_path / "inst.jsonl"
    result = invoke(
        "generate", "guess", "-n", "3", "--difficulty", "easy", "--seed", "5", "-o", str(out)
    )
    assert result.exit_code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [x["seed"] for x in lines] == [5, 6, 7] and all(x["task"] == "guess-v1" for x in lines)


def test_eval_writes_contract_fields_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = (
        "eval",
        "--agent",
        "noisy:0.3",
        "--tasks",
        "guess-v1",
        "-n",
        "3",
        "-k",
        "2",
        "--difficulty",
        "easy",
        "--concurrency",
        "4",
        "--out",
        str(out),
        "--quiet",
    )
    assert invoke(*args).exit_code == 0
    lines = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(lines) == 6
    for ep in lines:
        for key in (
            "task",
            "seed",
            "difficulty",
            "sample",
            "agent",
            "instance",
            "messages",
            "reward",
            "end_reason",
            "turns",
            "usage",
            "timings",
        ):
            assert key in ep, key
        assert {"total", "success", "components"} <= set(ep["reward"])
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["agent"] == "noisy:0.3" and run_json["tasks"] == ["guess-v1"]
    again = invoke(*args)
    assert "ran 0 episodes, skipped 6" in again.output
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 6


def test_eval_on_instances_file(tmp_path: Path) -> None:
    inst = tmp_path / "i.jsonl"
    invoke("generate", "guess", "-n", "2", "-o", str(inst))
    out = tmp_path / "run"
    result = invoke(
        "eval", "--agent", "expert", "--instances", str(inst), "--out", str(out), "--quiet"
    )
    assert result.exit_code == 0
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2


def test_report_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    invoke(
        "eval",
        "--agent",
        "expert",
        "--tasks",
        "guess",
        "-n",
        "2",
        "-k",
        "2",
        "--out",
        str(out),
        "--quiet",
    )
    printed = json.loads(invoke("report", str(out), "--json").output)
    assert list(printed) == ["guess-v1"] and printed["guess-v1"]["pass_at"] == {"1": 1.0, "2": 1.0}
    report = RunSummary.model_validate(printed)
    summary = report.task("guess-v1")
    assert report.episodes == 4 and summary is not None
    assert (
        summary.episodes == 4
        and summary.success_rate == 1.0
        and summary.pass_at == {1: 1.0, 2: 1.0}
    )
    assert summary.pass_at_k == 1.0 and summary.k == 2
    assert summary.end_reasons == {"answered": 4}


def test_bad_input_gets_clear_errors(tmp_path: Path) -> None:
    r = runner.invoke(app, ["eval", "--tasks", "nosuchtask", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown task 'nosuchtask'" in r.output
    r = runner.invoke(
        app, ["eval", "--agent", "bogus", "--tasks", "guess", "--out", str(tmp_path / "x")]
    )
    assert r.exit_code == 2 and "unknown agent" in r.output
    r = runner.invoke(
        app, ["eval", "--agent", "noisy:abc", "--tasks", "guess", "--out", str(tmp_path / "x")]
    )
    assert r.exit_code == 2 and "noisy:<rate>" in r.output
    r = runner.invoke(app, ["show", "guess", "--difficulty", "extreme"])
    assert r.exit_code == 2 and "no difficulty" in r.output
    r = runner.invoke(app, ["generate", "guess", "--knob", "nonsense", "-o", str(tmp_path / "i")])
    assert r.exit_code == 2 and "name=value" in r.output and not (tmp_path / "i").exists()
    r = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "does not exist" in r.output
    r = runner.invoke(
        app, ["eval", "--instances", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "y")]
    )
    assert r.exit_code == 2 and "does not exist" in r.output


def test_check_passes_on_a_good_task() -> None:
    result = invoke("check", "guess")
    assert result.exit_code == 0 and "PASS guess-v1" in result.output


def _eval(out: Path, *extra: str) -> Any:
    args = ["eval", "--tasks", "guess", "-n", "2", "--difficulty", "easy", "--out", str(out)]
    return runner.invoke(app, [*args, "--quiet", *extra])


def test_a_second_eval_with_another_agent_is_refused_unless_appended(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _eval(out, "--agent", "expert").exit_code == 0
    again = _eval(out, "--agent", "expert")
    assert again.exit_code == 0 and "skipped 2" in again.output  # the same command resumes
    other = _eval(out, "--agent", "random")
    assert other.exit_code == 2
    assert "differs in agent 'random' (the run has 'expert')" in " ".join(other.output.split())
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2  # nothing was added
    harder = _eval(out, "--agent", "expert", "--difficulty", "hard")
    assert harder.exit_code == 2 and "difficulty" in harder.output
    assert _eval(out, "--agent", "random", "--append").exit_code == 0
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 4


def test_a_copied_run_resumes_and_changed_instances_are_another_eval(tmp_path: Path) -> None:
    """Run identity follows what an instances file holds, not where it lies."""
    first = tmp_path / "a"
    first.mkdir()
    made = runner.invoke(app, ["generate", "guess", "-n", "2", "-o", str(first / "i.jsonl")])
    assert made.exit_code == 0, made.output

    def evaluate(where: Path) -> Any:
        args = ["eval", "--agent", "expert", "--instances", str(where / "i.jsonl")]
        return runner.invoke(app, [*args, "--quiet", "--out", str(where / "run")])

    assert evaluate(first).exit_code == 0
    copy = tmp_path / "b"
    shutil.copytree(first, copy)
    resumed = evaluate(copy)
    assert resumed.exit_code == 0 and "skipped 2" in resumed.output, resumed.output
    made = runner.invoke(
        app, ["generate", "guess", "-n", "2", "--seed", "7", "-o", str(copy / "i.jsonl")]
    )
    assert made.exit_code == 0, made.output
    changed = evaluate(copy)
    assert changed.exit_code == 2
    assert "the files at that path changed since" in " ".join(changed.output.split())
    assert len((copy / "run" / "episodes.jsonl").read_text().splitlines()) == 2


def test_every_episode_failing_the_same_way_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentharness.agents as agents

    class Broken:
        name = "broken"

        def policy(self, instance: object, sample: int = 0) -> Broken:
            return self

        async def act(self, messages: object, tools: object) -> None:
            raise agents.AgentError("server said 503 after 5 retries")

        async def aclose(self) -> None:
            return None

    monkeypatch.setattr(agents, "make_agent", lambda *a, **kw: Broken())
    r = _eval(tmp_path / "run")
    assert r.exit_code == 1
    lines = r.output.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert errors == [
        "error: all 2 episodes of this eval failed the same way: agent_error: server said 503 "
        "after 5 retries"
    ]


def test_openai_preflight_says_in_one_line_what_is_wrong(tmp_path: Path) -> None:
    from agentharness.testing.openai_server import ScriptedOpenAIServer, cycle_tools_policy

    base = ["--agent", "openai", "--out", str(tmp_path / "run")]
    dead = _eval(tmp_path / "a", *base, "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    assert dead.exit_code == 2 and "cannot reach the model server" in dead.output
    assert not (tmp_path / "run" / "episodes.jsonl").exists()
    with ScriptedOpenAIServer(policy=cycle_tools_policy()) as server:
        wrong = _eval(tmp_path / "b", *base, "--model", "gpt-x", "--base-url", server.base_url)
        assert wrong.exit_code == 2
        assert "does not serve model 'gpt-x'; it serves: scripted" in wrong.output
        ok = _eval(tmp_path / "c", *base, "--model", "scripted", "--base-url", server.base_url)
        assert ok.exit_code == 0, ok.output


def test_errors_print_once_and_keep_brackets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = runner.invoke(app, ["eval", "--instances", str(tmp_path / "none.jsonl")])
    assert r.exit_code == 2 and [ln for ln in r.output.splitlines() if "error" in ln] == [
        f"error: instances file {tmp_path / 'none.jsonl'} does not exist (make one with "
        "`bootcamp generate` or `bootcamp synth`)"
    ]
    from agentharness.cli.app import fail

    capsys.readouterr()
    with pytest.raises(typer.Exit):
        raise fail("pip install 'agentharness[train]'")
    assert capsys.readouterr().err == "error: pip install 'agentharness[train]'\n"


def test_a_bad_knob_is_one_line_naming_knob_value_and_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # generate's default output is ./instances.jsonl
    kept = '{"an earlier": "file"}\n'
    (tmp_path / "instances.jsonl").write_text(kept)
    for knob, message in [
        (
            "high=1",
            "bad knob value for guess-v1: high=1: Input should be greater than or equal to 2",
        ),
        ("nonsense=3", "guess-v1 has no knob(s) nonsense"),
    ]:
        r = runner.invoke(app, ["generate", "guess", "--knob", knob])
        assert r.exit_code == 2
        assert r.output.strip().startswith(f"error: {message}")
        # the generator rejected the knob: the file already there is untouched
        assert (tmp_path / "instances.jsonl").read_text() == kept


def test_max_turns_overrides_only_the_turn_limit(tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = _eval(out, "--agent", "nothing", "--max-turns", "7")
    assert r.exit_code == 0
    (line,) = (out / "episodes.jsonl").read_text().splitlines()[:1]
    # the task's nudge budget still applies: 1 turn + 2 nudges, then no_answer
    assert json.loads(line)["end_reason"] == "no_answer" and json.loads(line)["turns"] == 3


def test_show_says_where_images_go(tmp_path: Path) -> None:
    r = invoke("show", "tsp_vision", "--difficulty", "easy", "--images-dir", str(tmp_path))
    assert f"(image saved to {tmp_path.resolve()}" in r.output.replace("\n", "")


def test_no_color_turns_off_every_ansi_style(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    out = tmp_path / "run"
    assert _eval(out, "--agent", "expert").exit_code == 0
    cmd = [sys.executable, "-m", "agentharness.cli", "report", str(out)]
    env = {**os.environ, "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    styled = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    assert "\x1b[" in styled  # a terminal gets styles ...
    plain = subprocess.run(
        cmd, env={**env, "NO_COLOR": "1"}, capture_output=True, text=True, check=True
    ).stdout
    assert "\x1b[" not in plain and "guess-v1" in plain  # ... unless NO_COLOR is set


def test_bad_seeds_and_directories_as_files_are_one_line(tmp_path: Path) -> None:
    r = runner.invoke(app, ["show", "guess", "--seed", "-1"])
    assert r.exit_code == 2 and "'--seed': Input should be greater than or equal to 0" in r.output
    r = runner.invoke(app, ["generate", "guess", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "is a directory" in r.output
    out = tmp_path / "run"
    assert _eval(out, "--agent", "expert").exit_code == 0
    r = runner.invoke(app, ["export", "sft", str(out), "-o", str(tmp_path)])
    assert r.exit_code == 2 and "is a directory" in r.output
    with open(out / "episodes.jsonl", "ab") as f:
        f.write(b"\xff not utf-8\n")
    r = runner.invoke(app, ["report", str(out)])
    assert r.exit_code == 0 and "guess-v1" in r.stdout
    assert "warning:" in r.stderr and "not UTF-8" in r.stderr and "Traceback" not in r.output


def test_unusable_runs_are_one_error_line_from_every_command(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    for args in (
        ["report", missing],
        ["report", missing, "--json"],
        ["report", missing, "--html", str(tmp_path / "r.html")],
        ["mine", missing],
        ["filter", missing, "-o", str(tmp_path / "kept")],
        ["compare", missing, missing],
        ["export", "sft", missing, "-o", str(tmp_path / "sft.jsonl")],
        ["view", missing],
    ):
        r = runner.invoke(app, args)
        errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
        assert r.exit_code == 2 and len(errors) == 1 and "does not exist" in errors[0], args


def test_report_json_of_a_loop_directory(tmp_path: Path) -> None:
    for name in ("before", "after"):
        invoke(
            "eval",
            "--agent",
            "expert",
            "--tasks",
            "guess",
            "-n",
            "2",
            "--out",
            str(tmp_path / "loop" / "round_1" / name),
            "--quiet",
        )
    out = json.loads(invoke("report", str(tmp_path / "loop"), "--json").output)
    assert sorted(out) == ["round_1/after", "round_1/before"]
    assert RunSummary.model_validate(out["round_1/after"]).episodes == 2


def test_a_missing_optional_package_is_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a newcomer with only the quick start's install meets: the extra to install, in
    one line, before any work (no traceback, no progress bar)."""
    import importlib.util

    import agentharness.sources.gym as gym_source

    def no_gymnasium(name: str) -> None:
        raise ModuleNotFoundError("No module named 'gymnasium'", name="gymnasium")

    monkeypatch.setattr(gym_source, "load", no_gymnasium)
    for args in (
        ["show", "gym:NotCachedAnywhere-v0"],
        ["eval", "--agent", "random", "--tasks", "gym:NotCachedAnywhere-v0", "--quiet"],
    ):
        r = runner.invoke(app, [*args, "--out", str(tmp_path / "r")] if "eval" in args else args)
        assert r.exit_code == 2, r.output
        assert r.output.strip().splitlines() == [
            "error: gym: tasks need a package that is not installed (gymnasium); "
            "install it with: pip install 'agentharness[gym]'"
        ]

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ray" else real_find_spec(name, *a),
    )
    r = runner.invoke(
        app, ["eval", "--tasks", "guess", "--backend", "ray", "--out", str(tmp_path / "ray")]
    )
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "error: the Ray backend needs ray: pip install 'agentharness[ray]'"
    ]
    assert not (tmp_path / "ray").exists()


def test_help_lists_every_command_with_its_whole_first_sentence() -> None:
    result = runner.invoke(app, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    commands = result.output.split("Commands:", 1)[1]
    assert "..." not in commands, commands
    for name in ("eval", "mine", "loop", "export", "train"):
        assert f"\n  {name} " in commands


@pytest.mark.parametrize(
    "command", [["eval"], ["loop"], ["export", "sft"], ["train", "sft"], ["train", "grpo"]]
)
def test_option_help_has_no_uninformative_type_tags(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], terminal_width=100)
    assert result.exit_code == 0
    options = result.output.split("Options:", 1)[1]
    for tag in ("<str>", "<bool>", "<list["):
        assert tag not in options, options
    assert "<int>" in options or "<path>" in options or "<file>" in options  # these stay


def test_a_tracker_that_is_not_installed_fails_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    import agentharness.train.sft as sft

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trainer ran")

    monkeypatch.setattr(sft, "train_sft", never)
    data = tmp_path / "sft.jsonl"
    data.write_text("{}\n")
    args = ["train", "sft", "--data", str(data), "--out", str(tmp_path / "m")]
    r = runner.invoke(app, [*args, "--report-to", "no-such-tracker"])
    assert r.exit_code == 2
    (line,) = r.output.strip().splitlines()
    assert line.startswith("error: --report-to no-such-tracker: no such tracker installed")


def _numeric_options() -> list[tuple[str, str, Any]]:
    """(command, parameter, its typer.Option) for every int or float option of bootcamp."""
    import typing

    from typer.models import OptionInfo

    found = []

    def walk(typer_app: typer.Typer, prefix: str) -> None:
        for command in typer_app.registered_commands:
            callback = command.callback
            assert callback is not None
            name = f"{prefix}{command.name or callback.__name__.replace('_', '-')}"
            for param, hint in typing.get_type_hints(callback, include_extras=True).items():
                if typing.get_origin(hint) is not typing.Annotated:
                    continue
                base, *extras = typing.get_args(hint)
                info = next((e for e in extras if isinstance(e, OptionInfo)), None)
                kinds = set(typing.get_args(base)) or {base}
                if info is not None and kinds & {int, float}:
                    found.append((name, param, info))
        for group in typer_app.registered_groups:
            assert group.typer_instance is not None
            walk(group.typer_instance, f"{prefix}{group.name} ")

    walk(app, "")
    return found


def test_every_numeric_option_has_bounds() -> None:
    """A count of 0, a negative seed or a zero timeout is a usage error naming the option,
    never a run that waits forever (no episode starts at --concurrency 0) or does nothing."""
    from agentharness.cli.app import above_zero

    options = _numeric_options()
    assert len(options) > 60  # the walk found the commands
    unbounded = [
        f"{command} --{param.replace('_', '-')}"
        for command, param, info in options
        if info.min is None and info.max is None and info.callback is not above_zero
    ]
    assert not unbounded, f"numeric options without bounds: {unbounded}"


@pytest.mark.parametrize(
    "args, option",
    [
        (["eval", "--tasks", "guess", "--concurrency", "0"], "--concurrency"),
        (["eval", "--tasks", "guess", "-k", "0"], "-k"),
        (["eval", "--tasks", "guess", "--episode-timeout", "0"], "--episode-timeout"),
        (["generate", "guess", "-n", "-2"], "-n"),
        (["serve", "--port", "70000"], "--port"),
        (["compare", "a", "b", "--n-boot", "0"], "--n-boot"),
        (["train", "grpo", "--tasks", "guess", "--lr", "-1"], "--lr"),
    ],
)
def test_an_out_of_range_number_is_a_usage_error(args: list[str], option: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Invalid value" in result.output and option in result.output


def test_episode_source_rejects_a_concurrency_that_would_wait_forever() -> None:
    from agentharness.agents.scripted import ExpertAgent
    from agentharness.rollout.runner import EpisodeSource

    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        EpisodeSource(ExpertAgent(), concurrency=0)
    with pytest.raises(ValueError, match="episode_timeout_s must be above 0"):
        EpisodeSource(ExpertAgent(), episode_timeout_s=0)
