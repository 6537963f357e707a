"""The experiment script's defaults name tasks this checkout serves.

``experiments/smollm2_sft_grpo.sh`` pins task versions (``harmony-v3``, ...) so that its
results say what they measured; when a task gets a new version the old one is retired
and the script would stop at its first ``generate``. This catches that before a
multi-hour run does.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from agentharness.core.registry import get_task
from agentharness.store.schema import EpisodeRecord

SCRIPT = Path(__file__).parent.parent / "experiments" / "smollm2_sft_grpo.sh"


def load_summarize() -> ModuleType:
    """experiments/summarize.py, a script rather than a package module."""
    spec = importlib.util.spec_from_file_location("summarize", SCRIPT.parent / "summarize.py")
    assert spec and spec.loader
    summarize = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(summarize)
    return summarize


def default(name: str) -> str:
    match = re.search(rf'^{name}=\$\{{{name}:?-"?([^"}}]*)"?\}}', SCRIPT.read_text(), re.M)
    assert match, f"{name} has no default in {SCRIPT}"
    return match.group(1)


def test_the_default_tasks_are_current_versions() -> None:
    specs = default("TASK_SPECS").split()
    assert len(specs) >= 4
    for spec in specs:
        task_id, turns, tokens, *difficulty = spec.split(":")
        assert get_task(task_id).id == task_id
        assert int(turns) >= 1 and int(tokens) >= 1
        assert difficulty in ([], ["easy"], ["medium"], ["hard"]), spec
    assert default("DIFFICULTY") in ("easy", "medium", "hard")
    for task_id in default("GRPO_TASKS").split(","):
        assert task_id in [s.split(":")[0] for s in specs]
        assert get_task(task_id).id == task_id


def test_grpo_plays_each_task_under_its_held_out_budget() -> None:
    """v31 trained robot_reach at 5 turns and evaluated it at 8: the cap paid stopping early."""
    import subprocess

    text = SCRIPT.read_text()
    functions = "\n".join(
        line
        for line in text.splitlines()
        if re.match(r"(spec_of|grpo_turns|grpo_tokens)\(\)", line)
    )
    specs = default("TASK_SPECS")
    for task in default("GRPO_TASKS").split(","):
        spec = next(s for s in specs.split() if s.split(":")[0] == task)
        for env, want in (
            ({}, spec.split(":")[1:3]),
            ({"GRPO_MAX_TURNS": "4"}, ["4", spec.split(":")[2]]),
        ):
            got = subprocess.run(
                ["bash", "-c", f'{functions}\ngrpo_turns {task}; grpo_tokens {task}'],
                env={"TASK_SPECS": specs, "PATH": "/usr/bin:/bin", **env},
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            assert got == want, (task, env)
    assert '"${budgets[@]}"' in text.split("$BOOTCAMP train grpo")[1].split("\n\n")[0]


def bootcamp_calls() -> list[tuple[str, set[str]]]:
    """Each ``$BOOTCAMP <command> ...`` of the script: the command and the flags it passes."""
    text = SCRIPT.read_text().replace("\\\n", " ")
    calls = []
    for match in re.finditer(r"\$BOOTCAMP ((?:train|export) [a-z]+|[a-z]+)([^\n]*)", text):
        flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", match.group(2)))
        calls.append((match.group(1), flags))
    return calls


def test_every_flag_the_script_passes_exists() -> None:
    """A misspelt or removed option would stop the run at that stage, hours in."""
    from typer.testing import CliRunner

    from agentharness.cli.main import app

    calls = bootcamp_calls()
    assert {command for command, _ in calls} >= {"eval", "train sft", "train grpo"}
    runner = CliRunner()
    for command, flags in calls:
        result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "240"})
        assert result.exit_code == 0, result.output
        missing = sorted(f for f in flags if f not in result.output)
        assert not missing, f"`bootcamp {command}` has no {', '.join(missing)}"


def test_an_unknown_stop_after_fails_before_any_work(tmp_path: Path) -> None:
    """STOP_AFTER is checked first: a typo must not surface after hours of SFT."""
    import os
    import subprocess

    work = tmp_path / "w"
    done = subprocess.run(
        ["bash", str(SCRIPT), str(work)],
        env={**os.environ, "STOP_AFTER": "grpo", "BOOTCAMP": "false"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "STOP_AFTER=grpo: choose sft" in done.stderr
    assert not work.exists()
    assert default("STOP_AFTER") == ""


def per_task_values(settings: str, calls: str) -> list[str]:
    """What the script's per-task lookups (``of_task`` and the functions over it) print."""
    import subprocess

    names = ("of_task()", "probe_k()", "n_fresh()")
    lines = [x for x in SCRIPT.read_text().splitlines() if x.startswith(names)]
    assert len(lines) == len(names)
    program = "; ".join([settings, *lines, calls])
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_probe_samples_can_differ_per_task() -> None:
    assert '-k "$(probe_k "$task")"' in SCRIPT.read_text()
    assert default("PROBE_K_OF") == "robot_reach-v7=4 harmony-v5=8"  # the reported run's
    values = per_task_values(
        'PROBE_K=2; PROBE_K_OF="harmony-v5=8 thermal-v6=3"',
        "probe_k harmony-v5; probe_k thermal-v6; probe_k robot_reach-v7",
    )
    assert values == ["8", "3", "2"]


def test_fresh_expert_episodes_can_differ_per_task() -> None:
    assert '-n "$(n_fresh "$task")"' in SCRIPT.read_text()
    assert default("N_FRESH_OF") == "escape_room-v1=128"  # the reported run's (v47)
    values = per_task_values(
        'N_FRESH=8; N_FRESH_OF="escape_room-v1=128"', "n_fresh escape_room-v1; n_fresh harmony-v5"
    )
    assert values == ["128", "8"]


def test_grpo_resamples_flat_groups_by_default() -> None:
    """The reported run's dynamic sampling reaches `train grpo`."""
    assert default("GRPO_RESAMPLE_FLAT") == "1"
    assert '--resample-flat "$GRPO_RESAMPLE_FLAT"' in SCRIPT.read_text()


def test_group_rewards_splits_a_grpo_log_by_step_and_instance(tmp_path: Path) -> None:
    """The reward curve marks which task each GRPO group played (mixed-task runs)."""
    import asyncio

    from agentharness import make
    from agentharness.agents.scripted import ExpertAgent
    from agentharness.rollout.runner import run_one
    from agentharness.store import EpisodeRecord, RunDir

    summarize = load_summarize()

    run = RunDir(tmp_path / "rollouts")
    run.create({"command": "train grpo"})
    groups = (
        ("grpo:step", 0, 1, (1.0, 0.0)),
        ("grpo:flat:step", 1, 4, (0.0, 0.0)),  # set aside by --resample-flat: not trained
        ("grpo:step", 1, 2, (0.25, 0.25)),
        ("grpo:step", 1, 3, (1.0, 1.0)),
    )
    for agent, step, seed, totals in groups:
        inst = make("guess").reset(seed=seed).instance
        finished, timings = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
        for k, total in enumerate(totals):
            rec = EpisodeRecord.from_episode(
                finished, agent=f"{agent}{step}", sample=k, timings=timings
            )
            rec = rec.model_copy(update={"reward": rec.reward.model_copy(update={"total": total})})
            run.append(rec.model_copy(update={"episode_id": rec.make_id(inst, k, rec.agent)}))
    task = make("guess").reset(seed=1).instance.task
    assert summarize.group_rewards(tmp_path / "rollouts") == [
        (0, task, 0.5),
        (1, task, 0.25),
        (1, task, 1.0),
    ]
    (flat,) = summarize.grpo_groups(tmp_path / "rollouts", agent="grpo:flat:step")
    assert (flat["step"], flat["seed"], flat["rewards"]) == (1, 4, [0.0, 0.0])
    assert summarize.group_rewards(tmp_path / "missing") == []


def test_grpo_step_times_are_summarized_and_tabled() -> None:
    """summary.json says how many GRPO steps took under a minute; table.md gives each group's."""
    summarize = load_summarize()

    times = summarize.step_time_summary([42.0, 75.5, 59.9])
    assert times == {
        "each": [42.0, 75.5, 59.9],
        "median": 59.9,
        "max": 75.5,
        "under_60": 2,
        "steps": 3,
    }
    result = {
        "stages": {s: {"mean": None} for s in summarize.STAGES},
        "changes": {},
        "grpo_groups": [
            {"step": 0, "task": "t-v1", "seed": 7, "rewards": [1.0, 0.0], "step_seconds": 75.5},
            {"step": 1, "task": "t-v1", "seed": 8, "rewards": [1.0, 1.0], "step_seconds": None},
        ],
    }
    rows = [line for line in summarize.table(result).splitlines() if line.startswith("| 1 |")]
    assert rows == ["| 1 | t-v1 | 7 | 1, 0 | 0.500 | 76 |"]
    assert "| 2 | t-v1 | 8 | all 1 | 1.000 | - |" in summarize.table(result)


def test_draws_reads_one_change_over_runs_that_differ_in_a_seed(tmp_path: Path) -> None:
    """A recipe's gain over GRPO seeds: each draw, whether it meets the target, the spread."""
    summarize = load_summarize()

    def run(name: str, delta: float, ci: list[float], base: float = 0.5) -> Path:
        d = tmp_path / name
        d.mkdir()
        change = {"a_mean": base, "b_mean": base + delta, "delta": delta, "ci": ci}
        (d / "summary.json").write_text(json.dumps({"changes": {"grpo_vs_sft": change}}))
        return d

    runs = [
        run("s0", 0.15, [0.1, 0.2]),
        run("s1", 0.03, [-0.01, 0.08]),
        run("s2", 0.04, [0.01, 0.07]),
    ]
    result = summarize.draws(runs)
    assert [r["met"] for r in result["draws"]] == [True, False, False]  # s2: CI > 0, delta < target
    assert result["met"] == 1
    assert result["mean"] == pytest.approx(0.22 / 3)
    assert result["sd"] == pytest.approx(0.0665833, abs=1e-6)
    assert (result["min"], result["max"], result["same_base"]) == (0.03, 0.15, True)
    assert "target met in 1 of 3" in summarize.draws_table(result)

    other = summarize.draws([runs[0], run("elsewhere", 0.1, [0.05, 0.15], base=0.4)])
    assert not other["same_base"]
    assert "different stages" in summarize.draws_table(other)

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "summary.json").write_text('{"changes": {}}')
    with pytest.raises(SystemExit, match="no 'grpo_vs_sft' change"):
        summarize.draws([tmp_path / "empty"])
    with pytest.raises(SystemExit, match="does not exist"):
        summarize.draws([tmp_path / "nowhere"])


def test_summary_counts_instances_that_moved_and_turns_that_did_not(tmp_path: Path) -> None:
    import asyncio

    from agentharness.agents import make_agent
    from agentharness.rollout.runner import plan, run
    from agentharness.store import RunDir
    from agentharness.store.instances import write_instances

    summarize = load_summarize()
    work = tmp_path / "work"
    for stage, agent in (("untuned", "noisy:0.5"), ("sft", "expert"), ("grpo", "expert")):
        run_dir = RunDir(work / "runs" / stage / "guess")
        run_dir.create({"command": "test"})
        items = plan([get_task("guess")], n=8, k=1, seed=0, difficulty="medium")
        asyncio.run(run(items, make_agent(agent), run_dir, concurrency=4))
    experts = list(RunDir(work / "runs" / "sft" / "guess").episodes())
    write_instances(work / "held_out.jsonl", [r.instance for r in experts])

    result = summarize.summary(work, tmp_path / "results")
    same = result["changes"]["grpo_vs_sft"]
    assert (
        same["delta"] == 0
        and same["unchanged"] == 8
        and same["tasks"]["guess-v1"]["unchanged"] == 8
    )
    assert (same["wins"], same["losses"], same["solved_gained"], same["solved_lost"]) == (
        0,
        0,
        0,
        0,
    )
    learned = result["changes"]["sft_vs_untuned"]
    noisy = {
        r.instance.instance_id: r for r in RunDir(work / "runs" / "untuned" / "guess").episodes()
    }
    missed = sum(not noisy[r.instance.instance_id].reward.success for r in experts)
    assert missed > 0 and learned["solved_gained"] == missed and learned["solved_lost"] == 0
    assert learned["unchanged"] < 8
    table = (tmp_path / "results" / "table.md").read_text()
    assert "| grpo_vs_sft (all tasks) | +0.000 |" in table and "+0 / -0 (+0 / -0) | 8 |" in table


def played_by_the_expert(tmp_path: Path) -> tuple[list[EpisodeRecord], list[int]]:
    """Two expert samples of three guess instances (sorted), and the instances' seeds."""
    import asyncio

    from agentharness.agents import make_agent
    from agentharness.rollout.runner import plan, run
    from agentharness.store import RunDir

    played = RunDir(tmp_path / "played")
    played.create({"command": "test"})
    asyncio.run(run(plan([get_task("guess")], n=3, k=2, seed=0), make_agent("expert"), played))
    records = sorted(played.episodes(), key=lambda r: r.episode_id)
    return records, sorted({r.seed for r in records})


def rescored(
    path: Path, records: list[EpisodeRecord], score: dict[tuple[int, int], tuple[float, bool]]
) -> Path:
    """A run at ``path`` of ``records`` whose (seed, sample) is in ``score``, rescored so."""
    from agentharness.store import RunDir

    out = RunDir(path)
    out.create({"command": "test"})
    for r in records:
        if (r.seed, r.sample) in score:
            total, success = score[r.seed, r.sample]
            update = {"total": total, "success": success}
            out.append(r.model_copy(update={"reward": r.reward.model_copy(update=update)}))
    return out.path


def test_curriculum_keeps_instances_solved_sometimes_before_those_that_only_score_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Partial credit makes rewards differ in a group where no sample solves (v32's
    robot_reach: every sample stopped early, the nearest scored most); GRPO should train
    where success itself differs, and fall back to differing rewards only without any."""
    from agentharness.store.instances import read_instances

    summarize = load_summarize()
    records, seeds = played_by_the_expert(tmp_path)
    scores = {  # seed -> (reward, success) of its two samples
        seeds[0]: [(1.0, True), (0.3, False)],  # solved sometimes
        seeds[1]: [(0.4, False), (0.2, False)],  # rewards differ, never solved
        seeds[2]: [(1.0, True), (1.0, True)],  # always solved
    }

    def probe(name: str, drop: set[int]) -> Path:
        score = {(s, i): scores[s][i] for s in seeds if s not in drop for i in range(2)}
        return rescored(tmp_path / name, records, score)

    kept = tmp_path / "kept.jsonl"
    summarize.curriculum([probe("all", set())], kept)
    assert [i.seed for i in read_instances(kept)] == [seeds[0]]
    assert "solved by some samples, not by others; guess-v1 1" in capsys.readouterr().out
    summarize.curriculum([probe("unsolved", {seeds[0]})], kept)
    assert [i.seed for i in read_instances(kept)] == [seeds[1]]
    assert "rewards differ between samples" in capsys.readouterr().out


def test_always_solved_lists_the_instances_every_sample_solved(tmp_path: Path) -> None:
    from agentharness.store import RunDir
    from agentharness.store.instances import read_instances

    summarize = load_summarize()
    records, seeds = played_by_the_expert(tmp_path)
    failed = {(seeds[0], 1), (seeds[1], 0), (seeds[1], 1)}  # seeds[2]: both samples solve
    score = {(s, i): (1.0, (s, i) not in failed) for s in seeds for i in range(2)}
    probe = rescored(tmp_path / "probe", records, score)
    again = tmp_path / "again.jsonl"
    assert summarize.always_solved([probe], again) == 1
    assert [i.seed for i in read_instances(again)] == [seeds[2]]
    empty = RunDir(tmp_path / "empty")
    empty.create({"command": "test"})
    assert summarize.always_solved([empty.path], again) == 0
    assert again.read_text() == ""


def test_a_probe_topped_up_with_append_plays_only_the_samples_past_its_first(
    tmp_path: Path,
) -> None:
    """The script's PROBE_K_MAX: the same run, --instances of the always-solved ones, a larger
    -k and --append; the samples already played are skipped, and re-running resumes."""
    from typer.testing import CliRunner

    from agentharness.cli.main import app
    from agentharness.store import RunDir

    summarize = load_summarize()
    out, again = tmp_path / "probe", tmp_path / "again.jsonl"
    cli = CliRunner()
    first = ["eval", "--agent", "expert", "--tasks", "guess", "-n", "3", "-k", "2", "--quiet"]
    assert cli.invoke(app, [*first, "--out", str(out)]).exit_code == 0
    assert summarize.always_solved([out], again) == 3
    top_up = ["eval", "--agent", "expert", "--instances", str(again), "-k", "5", "--append"]
    done = cli.invoke(app, [*top_up, "--quiet", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert "ran 9 episodes" in done.output and "skipped 6" in done.output
    samples = sorted((r.seed, r.sample) for r in RunDir(out).episodes())
    assert samples == sorted((s, i) for s in {s for s, _ in samples} for i in range(5))
    # a resumed script re-runs both commands: nothing is played twice, nothing refused
    assert cli.invoke(app, [*first, "--out", str(out)]).exit_code == 0
    assert summarize.always_solved([out], again) == 3
    assert "ran 0 episodes" in cli.invoke(app, [*top_up, "--quiet", "--out", str(out)]).output


def test_new_draw_copies_a_workdir_whose_evaluations_resume(tmp_path: Path) -> None:
    """A GRPO draw reuses a workdir's earlier stages; its copied runs record the old
    workdir's paths, which `bootcamp eval` would take for another eval and refuse."""
    from typer.testing import CliRunner

    from agentharness.cli.main import app
    from agentharness.store import RunDir

    summarize = load_summarize()
    work, new = tmp_path / "v1", tmp_path / "v2"
    runner = CliRunner()

    def evaluate(w: Path, stage: str) -> str:
        result = runner.invoke(
            app,
            ["eval", "--agent", "expert", "--instances", f"{w}/held_out.guess.jsonl",
             "--max-turns", "6", "--quiet", "--out", f"{w}/runs/{stage}/guess"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        return result.output

    work.mkdir()
    generated = runner.invoke(
        app, ["generate", "guess", "-n", "3", "--seed", "0", "-o", f"{work}/held_out.guess.jsonl"]
    )
    assert generated.exit_code == 0, generated.output
    for stage in ("sft", "grpo"):
        evaluate(work, stage)
    (work / "models" / "grpo" / "final").mkdir(parents=True)
    (work / "models" / "sft" / "final").mkdir(parents=True)

    summarize.new_draw(work, new)
    assert (new / "models" / "sft" / "final").is_dir() and (new / "runs" / "sft").is_dir()
    assert not (new / "models" / "grpo").exists() and not (new / "runs" / "grpo").exists()
    assert str(work) not in (new / "runs" / "sft" / "guess" / "run.json").read_text()
    assert str(work) in (work / "runs" / "sft" / "guess" / "run.json").read_text()  # untouched
    # the copy's evaluation resumes: nothing runs again, nothing is refused
    assert "ran 0 episodes, skipped 3" in evaluate(new, "sft")
    assert len(list(RunDir(new / "runs" / "sft" / "guess").episodes())) == 3
    with pytest.raises(SystemExit, match="exists"):
        summarize.new_draw(work, new)
