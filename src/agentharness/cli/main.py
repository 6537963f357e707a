"""The ``bootcamp`` command. Scripts depend on its flags and outputs: keep them stable."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.table import Table

import agentharness
from agentharness.cli.app import above_zero, app, console, err, fail, warn
from agentharness.core.registry import (
    TASK_SOURCES,
    UnknownTaskError,
    all_tasks,
    get_task,
    resolve_tasks,
)
from agentharness.core.task import TaskConfigError
from agentharness.store.instances import read_instances, write_instances
from agentharness.store.run import content_fingerprint

if TYPE_CHECKING:
    from agentharness.store.summary import RunSummary


def parse_knobs(knobs: list[str] | None) -> dict[str, Any]:
    """``--knob name=value`` pairs; values are JSON when they parse, strings otherwise."""
    out: dict[str, Any] = {}
    for item in knobs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise fail(f"--knob takes name=value, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


@app.command()
def tasks(
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """List the registered tasks, then the task sources (prefixes) that convert others."""
    rows: list[dict[str, Any]] = [
        {
            "id": s.id,
            "modality": s.modality,
            "difficulties": list(s.difficulties),
            "description": s.description,
        }
        for s in all_tasks()
    ]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    table = Table("id", "modality", "difficulties", "description")
    for r in rows:
        table.add_row(r["id"], r["modality"], ",".join(r["difficulties"]), r["description"])
    console.print(table)
    sources = Table("task source", "converts", "example id")
    for prefix, (_, what, example) in TASK_SOURCES.items():
        sources.add_row(f"{prefix}:", what, example)
    console.print(sources)


@app.command()
def show(
    task: str,
    seed: Annotated[int, typer.Option(min=0, help="instance seed")] = 0,
    difficulty: Annotated[str, typer.Option(help="easy, medium or hard")] = "medium",
    knob: Annotated[
        list[str] | None, typer.Option(help="override a config field: name=value")
    ] = None,
    images_dir: Annotated[
        Path, typer.Option(help="where prompt images are saved (printed for each image)")
    ] = Path("."),
) -> None:
    """Print a task's prompt and tool schemas; save its images to files."""
    try:
        spec = get_task(task)
        instance = spec.instance(seed, difficulty, **parse_knobs(knob))
    except (UnknownTaskError, TaskConfigError) as e:
        raise fail(str(e)) from e
    console.rule(f"{spec.id}  difficulty={difficulty}  seed={seed}")
    n_images = 0
    for message in spec.generator.prompt(instance):
        console.print(f"[bold]{message.role}[/]")
        console.print(message.text, markup=False, highlight=False)
        for image in message.images:
            png = image.png_bytes()
            if png is None:
                continue
            images_dir.mkdir(parents=True, exist_ok=True)
            path = images_dir / f"{spec.name}_{difficulty}_{seed}_{n_images}.png"
            path.write_bytes(png)
            n_images += 1
            console.print(f"(image saved to {path.resolve()})", markup=False, highlight=False)
    console.rule("tools")
    print(json.dumps(spec.world.tool_schemas(), indent=2))


@app.command()
def generate(
    task: str,
    n: Annotated[int, typer.Option("-n", min=1, help="number of instances")] = 10,
    difficulty: Annotated[str, typer.Option(help="easy, medium or hard")] = "medium",
    seed: Annotated[
        int, typer.Option(min=0, help="first seed; instances use seed, seed+1, ...")
    ] = 0,
    knob: Annotated[
        list[str] | None, typer.Option(help="override a config field: name=value")
    ] = None,
    out: Annotated[
        Path, typer.Option("-o", "--out", help="JSONL file to write", dir_okay=False)
    ] = Path("instances.jsonl"),
) -> None:
    """Generate instances as JSONL (one Instance per line)."""
    try:
        specs = resolve_tasks(task)
        knobs = parse_knobs(knob)
        # every instance first: a knob value a generator rejects leaves `out` as it was
        instances = [
            spec.instance(s, difficulty, **knobs) for spec in specs for s in range(seed, seed + n)
        ]
        out.parent.mkdir(parents=True, exist_ok=True)
        write_instances(out, instances)
    except (UnknownTaskError, TaskConfigError) as e:
        raise fail(str(e)) from e
    console.print(f"wrote {n * len(specs)} instances to {out}")


@app.command("eval")
def eval_(
    agent: Annotated[
        str,
        typer.Option(
            help="openai | local | expert | noisy:<rate> | random | nothing | lazy:<kind>"
        ),
    ] = "expert",
    model: Annotated[
        str | None, typer.Option(help="model name (openai) or path/'smollm2' (local)")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
    ] = None,
    tasks: Annotated[str, typer.Option(help="comma-separated task ids, or 'all'")] = "all",
    n: Annotated[int, typer.Option("-n", min=1, help="instances (seeds) per task")] = 5,
    k: Annotated[int, typer.Option("-k", min=1, help="samples per instance")] = 1,
    difficulty: Annotated[str, typer.Option(help="easy, medium or hard")] = "medium",
    seed: Annotated[int, typer.Option(min=0, help="first instance seed")] = 0,
    knob: Annotated[
        list[str] | None, typer.Option(help="override a config field: name=value")
    ] = None,
    instances: Annotated[
        Path | None, typer.Option(help="evaluate on these instances (JSONL) instead")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="episodes in flight")] = 8,
    episode_timeout: Annotated[
        float | None, typer.Option(callback=above_zero, help="seconds per episode")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(help="override the task's turn budget", min=1)
    ] = None,
    temperature: Annotated[float | None, typer.Option(min=0, help="sampling temperature")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="max new tokens per turn")] = None,
    tool_format: Annotated[
        Literal["native", "text"],
        typer.Option(help="openai: native tool calls, or the tools written into the prompt"),
    ] = "native",
    agent_seed: Annotated[int, typer.Option(min=0, help="seed for scripted/local sampling")] = 0,
    out: Annotated[Path, typer.Option(help="run directory (re-run to resume)")] = Path("runs/eval"),
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
    preflight: Annotated[
        bool, typer.Option(help="openai: check the server and model before the first episode")
    ] = True,
    append: Annotated[
        bool, typer.Option(help="add to a run made by another agent or config (mixes them)")
    ] = False,
    backend: Annotated[
        str, typer.Option(help="local (one process) or ray (episodes spread over Ray workers)")
    ] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            help="ray: join this cluster (e.g. auto, head:6379); default starts a local Ray"
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option(help="ray: worker processes; --concurrency is split over them", min=1)
    ] = 2,
) -> None:
    """Run an agent on tasks; append every finished episode to OUT/episodes.jsonl."""
    from agentharness.agents import AgentError, make_agent
    from agentharness.rollout.runner import distinct_instances, plan, plan_instances, run
    from agentharness.store.run import RunDir, RunDirError

    ray_config = ray_options(backend, address, workers)

    try:
        if instances is not None:
            loaded, repeated = distinct_instances(read_instances(instances))
            if repeated:
                warn(
                    f"{instances}: dropped {repeated} line(s) repeating an instance already read "
                    f"(same task, seed and config); {len(loaded)} distinct instances"
                )
            items = plan_instances(loaded, k=k)
            task_ids = sorted({it.instance.task for it in items if it.instance is not None})
        else:
            specs = resolve_tasks(tasks)
            items = plan(specs, n=n, k=k, seed=seed, difficulty=difficulty, **parse_knobs(knob))
            task_ids = [s.id for s in specs]
        if agent == "expert" or agent.startswith("noisy"):
            for tid in task_ids:
                get_task(tid).require_expert()  # fail now, not once per episode
        sampling: dict[str, Any] = {}
        if temperature is not None:
            sampling["temperature"] = temperature
        if max_tokens is not None:
            sampling["max_tokens"] = max_tokens
        if agent == "openai" and model and preflight:
            from agentharness.agents.openai_agent import DEFAULT_BASE_URL
            from agentharness.agents.preflight import check_endpoint

            check_endpoint(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL, model)
        agent_options: dict[str, Any] = {
            "model": model,
            "base_url": base_url,
            "concurrency": concurrency,
            "seed": agent_seed,
            "sampling": sampling,
            "tool_format": tool_format,
        }
        # With Ray this agent only names the run (and checks the options); each worker
        # builds its own, with its share of the concurrency.
        the_agent = make_agent(agent, **agent_options)
    except typer.Exit:
        raise  # already reported in one line
    except (UnknownTaskError, TaskConfigError, ValueError, AgentError) as e:
        raise fail(str(e)) from e
    except Exception as e:
        raise fail(f"{type(e).__name__}: {e}") from e

    run_dir = RunDir(out)
    # What makes two evals "the same run": re-running it resumes; anything else would mix
    # episodes of different agents or settings into one report.
    identity = {
        "agent": the_agent.name,
        "model": model,
        "base_url": base_url,
        "tasks": task_ids,
        "difficulty": difficulty,
        "knobs": parse_knobs(knob),
        "instances_file": str(instances) if instances else None,
        "instances_digest": content_fingerprint(instances),
        "model_digest": content_fingerprint(model),
        "k": k,
        "max_turns": max_turns,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "tool_format": tool_format,
        "agent_seed": agent_seed,
    }
    run_info = {
        "command": "eval",
        "argv": sys.argv[1:],
        "agentharness": agentharness.__version__,
        "agent": the_agent.name,
        "tasks": task_ids,
        "difficulty": difficulty,
        "n": n,
        "k": k,
        "seed": seed,
        "instances_file": str(instances) if instances else None,
        "identity": identity,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "started_at": time.time(),
    }
    try:
        if not append:
            _refuse_mixing(run_dir, identity)
        run_dir.create(run_info)
    except RunDirError as e:
        raise fail(str(e)) from e

    # Only the turn limit changes; the task's other budgets (tool calls, nudges) stay.
    overrides = {"max_turns": max_turns} if max_turns is not None else None
    progress = None if quiet else _progress()
    task_id = None
    if progress is not None:
        progress.start()
        task_id = progress.add_task("episodes", total=len(items))

    finished: list[Any] = []

    def on_done(record: Any) -> None:
        finished.append(record)
        if progress is not None and task_id is not None:
            progress.advance(task_id)

    async def go() -> Any:
        try:
            if ray_config is not None:
                from agentharness.rollout.ray_backend import AgentSpec, run_ray

                per_worker = max(1, -(-concurrency // ray_config.workers))
                return await run_ray(
                    items,
                    AgentSpec(agent, {**agent_options, "concurrency": per_worker}),
                    run_dir,
                    ray_config=ray_config,
                    concurrency=concurrency,
                    episode_timeout_s=episode_timeout,
                    budget_overrides=overrides,
                    on_done=on_done,
                )
            return await run(
                items,
                the_agent,
                run_dir,
                concurrency=concurrency,
                episode_timeout_s=episode_timeout,
                budget_overrides=overrides,
                on_done=on_done,
            )
        finally:
            await the_agent.aclose()

    from agentharness.rollout.ray_backend import RayBackendError  # no ray import until used

    try:
        result = asyncio.run(go())
    except RayBackendError as e:
        raise fail(str(e)) from e
    finally:
        if progress is not None:
            progress.stop()
    where = ""
    if ray_config is not None:
        where = f" on {result.workers} Ray workers ({result.nodes} node(s))"
        if result.requeued:
            where += f"; {result.requeued} re-run after {result.worker_failures} lost chunk(s)"
    console.print(f"ran {result.ran} episodes{where}, skipped {result.skipped} already in {out}")
    for msg in result.failed_to_generate:
        warn(f"could not generate {msg}")
    _print_report(out, as_json=False)
    causes = _error_causes(finished)
    if finished and len(causes) == 1 and sum(causes.values()) == len(finished):
        (cause,) = causes
        raise fail(
            f"all {len(finished)} episodes of this eval failed the same way: {cause}", code=1
        )
    for cause, count in causes.most_common():
        warn(f"{count} of {len(finished)} episodes failed: {cause}")
    if result.failed_to_generate and not finished:
        raise fail("no instance could be generated; see the warnings above", code=1)


# identity keys naming a path -> the key of the fingerprint of what it held
CONTENT_OF = {"instances_file": "instances_digest", "model": "model_digest"}


def _refuse_mixing(run_dir: Any, identity: dict[str, Any]) -> None:
    """Stop an eval that would append another agent's or config's episodes to a run."""
    from agentharness.store.run import RunDirError

    previous = run_dir.run_info()
    if not previous:
        return
    before = previous.get("identity") or {
        key: previous.get(key) for key in ("agent", "tasks", "difficulty", "k")
    }
    # Where both evals fingerprinted what a path held, the content decides, not the path:
    # a copied run resumes, and a model retrained in place is another eval.
    by_content = {
        key for key, digest in CONTENT_OF.items() if before.get(digest) and identity.get(digest)
    }
    changed = [
        f"{key} {identity.get(key)!r} (the run has {before[key]!r})"
        + (" (the files at that path changed since)" if key in CONTENT_OF.values() else "")
        for key in before
        if key not in by_content and before[key] != identity.get(key)
    ]
    if changed:
        raise RunDirError(
            f"{run_dir.path} already holds another eval; this one differs in "
            f"{'; '.join(changed)}. Its episodes would mix into one report: choose another "
            "--out, or pass --append to add them anyway (re-running the same command resumes)."
        )


def _error_causes(records: list[Any]) -> Counter[str]:
    """Failed episodes of this invocation by cause (end reason and the error's first line)."""
    causes: Counter[str] = Counter()
    for r in records:
        if r.error or r.end_reason in ("agent_error", "timeout"):
            first = (r.error or "").strip().splitlines()[0][:160] if r.error else "no message"
            causes[f"{r.end_reason}: {first}"] += 1
    return causes


def ray_options(backend: str, address: str | None, workers: int) -> Any:
    """The Ray settings for ``--backend ray``, None for the local backend; bad flags fail."""
    if backend == "local":
        if address is not None:
            raise fail("--address needs --backend ray")
        return None
    if backend != "ray":
        raise fail(f"unknown --backend {backend!r}; choose local or ray")
    import importlib.util

    if importlib.util.find_spec("ray") is None:  # before any work or progress bar starts
        raise fail("the Ray backend needs ray: pip install 'agentharness[ray]'")
    from agentharness.rollout.ray_backend import RayConfig

    return RayConfig(address=address, workers=workers)


def _progress() -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
    )


def _print_report(run: Path, as_json: bool) -> None:
    """The per-task table (or JSON) of a run, or of every run in a loop directory."""
    from agentharness.store.reader import load_runs, named_run_dirs
    from agentharness.store.summary import summarize

    named = named_run_dirs([run])
    summaries: dict[str, RunSummary] = {}
    for name, path in named:
        loaded = load_runs([path], allow_empty=True)
        for w in loaded.warnings:
            warn(w)
        summaries[name] = summarize(loaded.records)
    if len(named) == 1 and named[0][1] == run:  # a run directory
        (summary,) = summaries.values()
        if as_json:
            print(summary.model_dump_json(indent=2))
        elif not summary.episodes:
            console.print(f"{run}: no episodes yet")
        else:
            console.print(_summary_table(summary))
        return
    # A loop directory: every run it holds, each under its own heading.
    if as_json:
        print(json.dumps({n: s.model_dump(mode="json") for n, s in summaries.items()}, indent=2))
        return
    for name, summary in summaries.items():
        console.rule(name)
        console.print(_summary_table(summary) if summary.episodes else f"{name}: no episodes yet")


def _summary_table(summary: RunSummary) -> Table:
    # pass@k says something only with several samples per instance.
    with_k = any(t.k > 1 for t in summary.tasks)
    table = Table(
        "task",
        "episodes",
        "mean reward",
        "success",
        *(["pass@1", "pass@k"] if with_k else []),
        "turns",
        "end reasons",
    )
    for t in summary.tasks:
        reasons = ", ".join(f"{k}={v}" for k, v in t.end_reasons.items())
        passes = [f"{t.pass_at[1]:.2f}", f"{t.pass_at_k:.2f} (k={t.k})"]
        table.add_row(
            t.task,
            str(t.episodes),
            f"{t.mean_reward:.3f}",
            f"{t.success_rate:.2f}",
            *(passes if with_k else []),
            f"{t.mean_turns:.1f}",
            reasons,
        )
    return table


@app.command()
def report(
    run: Path,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="write an HTML report with plots (RUN may be a loop dir)"),
    ] = None,
    viewer_url: Annotated[
        str,
        typer.Option(
            help="where `bootcamp view RUN` serves; the HTML report links its runs, tasks and "
            "failures there ('' for no links)"
        ),
    ] = "http://127.0.0.1:8765",
) -> None:
    """Per task: episodes, mean reward, success rate, pass@k and end reasons."""
    if html is not None:
        from agentharness.loop.html_report import write_html_report

        console.print(f"wrote {write_html_report(run, html, viewer_url or None)}")
        return
    _print_report(run, as_json)


@app.command()
def check(
    task: str,
    seeds: Annotated[
        int, typer.Option(min=1, help="seeds per difficulty for the basic checks")
    ] = 3,
    adversarial_seeds: Annotated[
        int, typer.Option(min=0, help="seeds per difficulty for the lazy-policy hunt (0 skips it)")
    ] = 30,
) -> None:
    """Run the conformance check on a task, or 'all'."""
    from agentharness.conformance import check_task

    try:
        specs = resolve_tasks(task)
    except UnknownTaskError as e:
        raise fail(str(e)) from e
    failed = 0
    for spec in specs:
        rep = check_task(spec, seeds=seeds, adversarial_seeds=adversarial_seeds)
        status = "[green]PASS[/]" if rep.passed else "[red]FAIL[/]"
        console.print(f"{status} {spec.id}")
        for r in rep.results:
            mark = "skip" if r.skipped else ("ok " if r.passed else "FAIL")
            console.print(f"   {mark} {r.name}: {r.detail}", markup=False, highlight=False)
        if rep.adversarial is not None:
            console.print(
                "   mean reward and success rate per policy and difficulty:",
                markup=False,
                highlight=False,
            )
            for line in rep.adversarial.table().splitlines():
                console.print(f"     {line}", markup=False, highlight=False)
            for skipped in rep.adversarial.skipped:
                console.print(f"   skipped: {skipped}", markup=False, highlight=False)
        failed += not rep.passed
    if failed:
        raise typer.Exit(1)


# Command groups live in their own modules and register themselves on `app`.
from agentharness.cli import (  # noqa: E402, F401
    export_commands,
    loop_commands,
    serve_commands,
    sources_commands,
    train_commands,
    view_commands,
)


def main() -> None:
    from agentharness.train import TrainInputError
    from agentharness.train.allocator import MIMALLOC_SETTINGS, restart_under_mimalloc

    settings = MIMALLOC_SETTINGS.get(tuple(sys.argv[1:3]))
    if settings is not None:
        # Before anything is allocated: a training process runs under mimalloc where
        # installed (agentharness.train.allocator says why).
        try:
            restart_under_mimalloc(settings)
        except TrainInputError as e:
            raise SystemExit(f"error: {e}") from None
    app()


if __name__ == "__main__":
    main()
