"""`bootcamp mine | synth | filter | correct | compare | loop`: the closed-loop stages on run directories.

Thin wrappers: each reads its runs through :func:`agentharness.store.load_runs` (unusable
input is a :class:`~agentharness.store.run.RunDirError`, printed as one line by the app;
corrupt lines skipped with a warning), calls the pure stage function and prints its typed
result (``--json`` for machines).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Table

from agentharness.cli.app import app, console, err, fail, warn
from agentharness.loop.checks import LoopInputError, mixed_versions
from agentharness.store.reader import LoadedRuns, load_runs


def _load(runs: list[Path], *, resolve_images: bool = False) -> LoadedRuns:
    """The runs, with what was skipped and any mix of task versions in ``warnings`` (each
    also printed as a warning line)."""
    loaded = load_runs(runs, resolve_images=resolve_images)
    mixed = mixed_versions(loaded.records)
    if mixed:
        loaded.warnings.append(mixed)
    for w in loaded.warnings:
        warn(w)
    return loaded


@app.command(
    "mine", short_help="Failure clusters of a run: what fails, how often, and an example of each."
)
def mine_cmd(
    runs: Annotated[list[Path], typer.Argument(help="run directories to mine")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    examples: Annotated[int, typer.Option(min=0, help="example episodes per cluster")] = 3,
    top: Annotated[int, typer.Option(min=1, help="clusters to print")] = 10,
    out: Annotated[
        Path | None,
        typer.Option("-o", "--out", help="also write the report as JSON (read by `report --html`)"),
    ] = None,
) -> None:
    """Failure clusters: what fails (task, difficulty, knob bins, end reason, weakest reward
    component) and how often, with example episodes."""
    from agentharness.loop.mine import mine

    loaded = _load(runs)
    report = mine(
        loaded.records,
        examples=examples,
        runs=[str(r) for r in runs],
        warnings=loaded.warnings,
    )
    if out is not None:
        if out.is_dir():
            raise fail(f"{out} is a directory; -o takes a file such as mine.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report.model_dump_json(indent=2))
        err.print(f"wrote {out}", markup=False, highlight=False)
    if as_json:
        print(report.model_dump_json(indent=2))
        return
    for line in report.summary_lines(top=top):
        console.print(line, markup=False, highlight=False)
    for title, rows in (
        ("end reasons", report.by_end_reason),
        ("weakest component (failures)", report.by_weakest),
        ("knob bins that vary", report.by_knob[:15]),
    ):
        if not rows:
            continue
        table = Table(title, "episodes", "failures", "rate")
        for s in rows:
            table.add_row(s.group, str(s.episodes), str(s.failures), f"{s.rate:.0%}")
        console.print(table)


@app.command(
    "synth",
    short_help="New instances around a run's failures: neighbours, harder and easier variants.",
)
def synth_cmd(
    runs: Annotated[list[Path], typer.Argument(help="run directories whose failures to target")],
    out: Annotated[Path, typer.Option("-o", "--out", help="JSONL file of instances to write")],
    n: Annotated[int, typer.Option("-n", min=1, help="instances to synthesize in all")] = 20,
    seed: Annotated[
        int, typer.Option(min=0, help="synthesis seed (same inputs + seed, same output)")
    ] = 0,
    exclude: Annotated[
        list[Path] | None,
        typer.Option(help="instances JSONL never to reproduce (e.g. a held-out set); repeatable"),
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="expert validations in flight")] = 4,
    max_attempts: Annotated[int, typer.Option(min=1, help="tries per slot before giving up")] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """New instances around the failures: neighbours under the same conditions, plus harder
    and easier variants. Each is solved by the expert before it is written, and records
    its provenance (cluster, source episodes, parent instance, variant)."""
    from agentharness.loop.synthesize import synthesize
    from agentharness.store.instances import read_instances, write_instances

    if n < 0:
        raise fail("-n must be >= 0")
    if out.is_dir():
        raise fail(f"{out} is a directory; -o takes a .jsonl file")
    loaded = _load(runs)
    excluded = {i.instance_id for path in exclude or [] for i in read_instances(path)}
    instances, report = synthesize(
        loaded.records,
        n=n,
        seed=seed,
        exclude=excluded,
        concurrency=concurrency,
        max_attempts=max_attempts,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_instances(out, instances)
    if as_json:
        print(report.model_dump_json(indent=2))
        return
    if not report.clusters:
        console.print(f"no failures in {', '.join(map(str, runs))}: nothing to synthesize")
    variants = ", ".join(f"{v} {c}" for v, c in report.by_variant.items()) or "none"
    console.print(
        f"wrote {report.written} of {n} requested instances to {out} ({variants}) "
        f"around {len(report.clusters)} failure cluster(s)",
        highlight=False,
    )
    if report.rejected:
        rejected = ", ".join(f"{k}={v}" for k, v in report.rejected.items())
        console.print(f"rejected candidates: {rejected}", highlight=False)
    if report.unfilled:
        err.print(
            f"[yellow]warning:[/] {report.unfilled} slot(s) found no instance the expert solves "
            f"in {max_attempts} attempts",
            highlight=False,
        )


@app.command("filter")
def filter_cmd(
    runs: Annotated[list[Path], typer.Argument(help="run directories to filter")],
    out: Annotated[Path, typer.Option("-o", "--out", help="run directory to write")],
    min_reward: Annotated[
        float | None, typer.Option(min=0, max=1, help="drop episodes below this reward")
    ] = None,
    success_only: Annotated[bool, typer.Option(help="keep successful episodes only")] = False,
    max_turns: Annotated[
        int | None, typer.Option("--keep-max-turns", min=1, help="drop episodes with more turns")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--keep-max-tokens",
            min=1,
            help="drop longer conversations (estimated at 4 characters per token)",
        ),
    ] = None,
    allow_tool_errors: Annotated[bool, typer.Option(help="keep episodes with tool errors")] = False,
    allow_format_errors: Annotated[
        bool, typer.Option(help="keep episodes with malformed turns")
    ] = False,
    keep_duplicates: Annotated[
        bool, typer.Option(help="keep identical action sequences on the same instance")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print counts as JSON")] = False,
) -> None:
    """Keep the trajectories worth learning from, as a new run directory; say what was
    dropped and why."""
    from pydantic import ValidationError

    from agentharness.loop.filter import FilterCriteria, filter_records, write_filtered
    from agentharness.store.run import RunDir

    try:
        criteria = FilterCriteria(
            min_reward=min_reward,
            success_only=success_only,
            max_turns=max_turns,
            max_tokens=max_tokens,
            allow_tool_errors=allow_tool_errors,
            allow_format_errors=allow_format_errors,
            dedupe=not keep_duplicates,
        )
    except ValidationError as e:
        raise fail(f"bad filter option: {e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}") from e
    target = out.resolve()
    if any(target == r.resolve() for r in runs):
        raise fail(f"-o {out} is one of the input runs; write the filtered run elsewhere")
    existing = RunDir(out)
    if out.exists() and not out.is_dir():
        raise fail(f"{out} exists and is not a directory; choose another -o")
    if existing.episodes_path.exists() and existing.run_info().get("command") != "filter":
        raise fail(
            f"{out} already holds a run that filter did not make; refusing to overwrite it "
            "(choose an empty -o)"
        )
    loaded = _load(runs, resolve_images=True)
    result = filter_records(loaded.records, criteria)
    write_filtered(out, result, criteria, runs)
    summary = result.summary()
    if as_json:
        print(json.dumps({"out": str(out), **summary.model_dump(mode="json")}, indent=2))
        return
    console.print(f"kept {summary.kept} of {summary.input} episodes -> {out}", highlight=False)
    for reason, count in summary.dropped.items():
        console.print(
            f"  dropped {count} {reason} (e.g. {summary.examples[reason]})",
            markup=False,
            highlight=False,
        )


@app.command(
    "correct",
    short_help="SFT rows from the expert's actions in the states a policy's unsolved episodes reach.",
)
def correct_cmd(
    runs: Annotated[list[Path], typer.Argument(help="run directories of the policy's episodes")],
    out: Annotated[Path, typer.Option("-o", "--out", help="SFT JSONL to write")],
    tool_format: Annotated[
        Literal["native", "text"],
        typer.Option(
            help="as `bootcamp export sft`: native (tool_calls + tools column) or text "
            "(as the local agent sees it)"
        ),
    ] = "text",
    only_disagreeing: Annotated[
        bool,
        typer.Option(
            "--only-disagreeing",
            help="leave out turns where the expert makes the policy's own calls",
        ),
    ] = False,
    max_per_episode: Annotated[
        int | None,
        typer.Option(
            min=1, help="keep each episode's first N rows (a looping policy repeats one error)"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """DAgger over logs: replay each unsolved episode, let the task's expert play on from
    every turn, and write one per-turn SFT row (prompt = the policy's conversation so far,
    completion = the expert's turn) wherever the expert then solves the instance."""
    from agentharness.export.common import write_jsonl
    from agentharness.loop.correct import correction_rows

    if any(out.resolve() == r.resolve() for r in runs):
        raise fail(f"-o {out} is one of the input runs; write the rows to a JSONL file")
    loaded = _load(runs, resolve_images=True)
    try:
        rows, report = correction_rows(
            loaded.records,
            tool_format=tool_format,
            only_disagreeing=only_disagreeing,
            max_per_episode=max_per_episode,
        )
    except LoopInputError as e:
        raise fail(str(e)) from e
    write_jsonl(rows, out)
    if as_json:
        print(json.dumps({"out": str(out), **report.model_dump(mode="json")}, indent=2))
        return
    console.print(f"{report.line()} -> {out}", highlight=False, markup=False)


@app.command(
    "compare",
    short_help="Per-task reward and success of two runs, deltas with bootstrap intervals.",
)
def compare_cmd(
    run_a: Annotated[Path, typer.Argument(help="baseline run (A)")],
    run_b: Annotated[Path, typer.Argument(help="new run (B); deltas are B - A")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    seed: Annotated[int, typer.Option(min=0, help="bootstrap seed")] = 0,
    n_boot: Annotated[int, typer.Option(min=1, help="bootstrap resamples")] = 2000,
    confidence: Annotated[
        float, typer.Option(min=0.5, max=1, help="interval level, below 1")
    ] = 0.95,
) -> None:
    """Per-task mean reward and success of two runs, deltas with bootstrap confidence
    intervals; paired by instance when both runs used the same instances."""
    from agentharness.loop.compare import compare

    a = _load([run_a])
    b = _load([run_b])
    try:
        report = compare(
            a.records,
            b.records,
            seed=seed,
            n_boot=n_boot,
            confidence=confidence,
            run_a=str(run_a),
            run_b=str(run_b),
        )
    except (LoopInputError, ValueError) as e:
        raise fail(str(e)) from e
    if as_json:
        print(report.model_dump_json(indent=2))
        return
    table = Table(
        "task",
        "instances",
        "reward A -> B",
        f"Δ reward [{confidence:.0%} CI]",
        "success A -> B",
        "instances B won / lost",
        "verdict",
        title=f"B = {run_b} vs A = {run_a}",
    )
    for t in [*report.tasks, *([report.overall] if report.overall else [])]:
        ci = t.reward.ci
        ci_text = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
        table.add_row(
            t.task,
            f"{t.instances_a}/{t.instances_b} {'paired' if t.paired else 'unpaired'}",
            f"{t.reward.a:.3f} -> {t.reward.b:.3f}",
            f"{t.reward.delta:+.3f}{ci_text}",
            f"{t.success.a:.0%} -> {t.success.b:.0%}",
            t.wins_text(),
            t.verdict,
        )
    console.print(table)
    for name, only in (("A", report.only_in_a), ("B", report.only_in_b)):
        if only:
            console.print(f"only in {name} (not compared): {', '.join(only)}", highlight=False)


@app.command(
    "loop",
    short_help="The closed loop: held-out eval, mine, synth, teacher, filter, export, train, re-eval.",
)
def loop_cmd(
    student: Annotated[str, typer.Option(help="agent to improve, as in `eval --agent`")],
    out: Annotated[Path, typer.Option(help="loop directory (re-run to resume)")],
    teacher: Annotated[str, typer.Option(help="agent whose rollouts become training data")] = (
        "expert"
    ),
    tasks: Annotated[str, typer.Option(help="comma-separated task ids, or 'all'")] = "all",
    rounds: Annotated[
        int, typer.Option(min=1, help="rounds (raise it later to continue a loop)")
    ] = 1,
    student_model: Annotated[str | None, typer.Option(help="student --model")] = None,
    student_base_url: Annotated[str | None, typer.Option(help="student --base-url")] = None,
    teacher_model: Annotated[str | None, typer.Option(help="teacher --model")] = None,
    teacher_base_url: Annotated[str | None, typer.Option(help="teacher --base-url")] = None,
    heldout_n: Annotated[
        int,
        typer.Option("--heldout-n", "-n", min=1, help="held-out instances per task and difficulty"),
    ] = 10,
    difficulty: Annotated[str, typer.Option(help="difficulty, or a comma-separated list")] = (
        "medium"
    ),
    seed: Annotated[
        int, typer.Option(min=0, help="seed of the held-out set, synthesis and CIs")
    ] = 0,
    eval_k: Annotated[int, typer.Option(min=1, help="student samples per held-out instance")] = 1,
    synth_n: Annotated[int, typer.Option(min=0, help="instances synthesized per round")] = 20,
    teacher_k: Annotated[
        int, typer.Option(min=1, help="teacher samples per synthesized instance")
    ] = 1,
    min_reward: Annotated[
        float | None, typer.Option(min=0, max=1, help="filter: minimum reward")
    ] = None,
    success_only: Annotated[bool, typer.Option(help="filter: successful episodes only")] = True,
    max_turns: Annotated[
        int | None,
        typer.Option("--keep-max-turns", min=1, help="filter: most turns of a kept episode"),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--keep-max-tokens", min=1, help="filter: longest kept conversation, in tokens"
        ),
    ] = None,
    allow_tool_errors: Annotated[bool, typer.Option(help="filter: keep tool errors")] = False,
    trainer: Annotated[
        Literal["none", "sft", "grpo"], typer.Option(help="train the student between evals")
    ] = "none",
    train_max_steps: Annotated[int | None, typer.Option(min=1, help="trainer step limit")] = None,
    temperature: Annotated[float | None, typer.Option(min=0, help="sampling temperature")] = None,
    agent_seed: Annotated[int, typer.Option(min=0, help="seed for scripted/local sampling")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, help="episodes in flight")] = 8,
    backend: Annotated[
        str, typer.Option(help="rollout stages: local (one process) or ray (Ray workers)")
    ] = "local",
    address: Annotated[
        str | None, typer.Option(help="ray: join this cluster; default starts a local Ray")
    ] = None,
    workers: Annotated[int, typer.Option(help="ray: worker processes", min=1)] = 2,
) -> None:
    """The closed loop: eval on a fixed held-out set, mine, synth, teacher rollouts, filter,
    export, train (with --trainer), re-eval and compare. Each stage has its own
    subdirectory of OUT; re-running the same command resumes where it stopped."""
    from pydantic import ValidationError

    from agentharness.loop.pipeline import LoopConfig, run_loop

    try:
        config = LoopConfig(
            student=student,
            student_model=student_model,
            student_base_url=student_base_url,
            teacher=teacher,
            teacher_model=teacher_model,
            teacher_base_url=teacher_base_url,
            tasks=tasks,
            heldout_n=heldout_n,
            difficulty=difficulty,
            seed=seed,
            eval_k=eval_k,
            synth_n=synth_n,
            teacher_k=teacher_k,
            min_reward=min_reward,
            success_only=success_only,
            max_turns=max_turns,
            max_tokens=max_tokens,
            allow_tool_errors=allow_tool_errors,
            trainer=trainer,
            train_max_steps=train_max_steps,
            temperature=temperature,
            agent_seed=agent_seed,
            rounds=rounds,
            concurrency=concurrency,
            backend=backend,
            ray_address=address,
            ray_workers=workers,
        )
    except ValidationError as e:
        first = e.errors()[0]
        raise fail(f"bad option --{str(first['loc'][0]).replace('_', '-')}: {first['msg']}") from e

    def log(message: str) -> None:
        err.print(message, markup=False, highlight=False)

    from agentharness.rollout.ray_backend import RayBackendError  # no ray import until used

    try:
        summary = run_loop(config, out, log=log)
    except (LoopInputError, RayBackendError) as e:
        raise fail(str(e)) from e
    table = Table("round", "failures", "synth / kept", "trained", "reward", "Δ [CI]", "verdict")
    for r in summary.rounds:
        c = r.compare
        table.add_row(
            str(r.round),
            str(r.failures),
            f"{r.synthesized} / {r.kept}",
            "yes" if r.trained else "no",
            f"{c.reward_before:.3f} -> {c.reward_after:.3f}"
            if c.reward_before is not None and c.reward_after is not None
            else "-",
            f"{c.delta:+.3f} [{c.ci[0]:+.3f}, {c.ci[1]:+.3f}]"
            if c.delta is not None and c.ci
            else "-",
            c.verdict or "-",
        )
    console.print(table)
    console.print(f"loop directory: {out} (summary.json, round_*/)", highlight=False)
