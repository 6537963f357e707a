"""``bootcamp new`` and ``bootcamp convert``: tasks from elsewhere."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from agentharness.cli.app import above_zero, app, console, err, fail


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="task name: lowercase letters, digits, _")],
    modality: Annotated[str, typer.Option(help="text or vision")] = "text",
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="package directory (default: ./NAME)")
    ] = None,
    install: Annotated[
        bool, typer.Option(help="pip install -e the package here, so bootcamp sees the task")
    ] = True,
) -> None:
    """Write a complete task package that passes `bootcamp check`; edit it into your task."""
    from agentharness.sources.scaffold import ScaffoldError, write_package
    from agentharness.sources.scaffold import install as pip_install

    target = out or Path(name)
    try:
        written = write_package(name, target, modality)  # type: ignore[arg-type]
    except ScaffoldError as e:
        raise fail(str(e)) from e
    console.print(f"wrote {len(written)} files to {target}/")
    if install:
        result = pip_install(target)
        if result.returncode != 0:
            err.print(result.stdout[-2000:] + result.stderr[-2000:])
            raise fail(f"pip install -e {target} failed; the files are written, fix and retry")
        console.print(f"installed {name} (editable): `bootcamp tasks` lists it")
    else:
        console.print(f"install it with: pip install -e {target}")
    import importlib.util

    pytest_hint = "" if importlib.util.find_spec("pytest") else " (after: pip install pytest)"
    console.print(
        f"next: bootcamp eval --agent expert --tasks {name} -n 5 --out runs/{name}\n"
        f"      bootcamp check {name};  cd {target} && python -m pytest -q{pytest_hint}",
        highlight=False,
    )


@app.command()
def convert(
    spec: Annotated[Path, typer.Argument(help="a markdown description, or a source directory")],
    agent: Annotated[str, typer.Option(help="the writing agent: openai")] = "openai",
    model: Annotated[str | None, typer.Option(help="model name the server serves")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
    ] = None,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="package directory")] = None,
    name: Annotated[
        str | None, typer.Option(help="task name (default: from the spec's file name)")
    ] = None,
    max_turns: Annotated[int, typer.Option(min=1, help="the writer's turn budget")] = 60,
    max_checks: Annotated[int, typer.Option(min=1, help="check runs the writer may spend")] = 8,
    check_timeout: Annotated[
        float, typer.Option(callback=above_zero, help="seconds per check run")
    ] = 600.0,
    temperature: Annotated[float | None, typer.Option(min=0, help="sampling temperature")] = None,
    install: Annotated[bool, typer.Option(help="pip install -e the package if it passes")] = True,
    preflight: Annotated[
        bool, typer.Option(help="openai: check the server and model before writing anything")
    ] = True,
) -> None:
    """An LLM writes a task package from SPEC, runs the check, repairs until it passes."""
    import asyncio
    import re

    from agentharness.agents import AgentError, make_agent
    from agentharness.sources.scaffold import ScaffoldError
    from agentharness.sources.writer import convert as run_convert
    from agentharness.sources.writer import read_spec

    task_name = name or re.sub(r"[^a-z0-9_]", "_", spec.stem.lower()).strip("_")
    if task_name and not task_name[0].isalpha():
        task_name = "task_" + task_name
    target = out or Path(task_name)
    try:
        spec_text = read_spec(spec)
        sampling = {} if temperature is None else {"temperature": temperature}
        if agent == "openai" and model and preflight:
            from agentharness.agents.openai_agent import DEFAULT_BASE_URL
            from agentharness.agents.preflight import check_endpoint

            check_endpoint(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL, model)
        the_agent = make_agent(agent, model=model, base_url=base_url, sampling=sampling)
    except (FileNotFoundError, ValueError, AgentError) as e:
        raise fail(str(e)) from e

    async def go() -> object:
        try:
            return await run_convert(
                spec_text,
                task_name,
                target,
                the_agent,
                max_turns=max_turns,
                max_checks=max_checks,
                check_timeout_s=check_timeout,
                register=install,
            )
        finally:
            await the_agent.aclose()

    try:
        result = asyncio.run(go())
    except ScaffoldError as e:
        raise fail(str(e)) from e
    from agentharness.sources.writer import ConvertResult

    assert isinstance(result, ConvertResult)
    for i, attempt in enumerate(result.attempts, 1):
        verdict = "passed" if attempt.passed else "failed"
        console.print(f"attempt {i}: {verdict} ({attempt.seconds:.0f} s)")
    console.print(f"log: {target}/.convert/attempts.jsonl, transcript.json")
    if result.problem:
        raise fail(
            f"{task_name} was not written: {result.problem}; it was not registered. "
            f"The files are in {target}/",
            code=1,
        )
    if not result.passed:
        err.print(result.final.feedback(), markup=False, highlight=False)
        raise fail(
            f"{task_name} fails the check after the writer stopped ({result.end_reason}); "
            f"it was not registered. The files are in {target}/",
            code=1,
        )
    status = "installed" if result.registered else f"passes; install with: pip install -e {target}"
    console.print(f"{task_name}: the check and its tests pass; {status}")
