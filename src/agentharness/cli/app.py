"""The shared ``bootcamp`` Typer app and console helpers used by every command module."""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from agentharness.store.run import RunDirError

T = TypeVar("T")


class _Commands(TyperGroup):
    """The command group: unusable run input (:class:`RunDirError`) from any command is
    one error line and exit code 2, wherever it was raised."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except RunDirError as e:
            raise fail(str(e)) from e

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command's whole first sentence, wrapped to the terminal (click cuts it
        mid-sentence with "..." to fit one line)."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# Type tags that say nothing the description does not (``--agent <str>``, ``<list[Path]>``);
# ``<int>``, ``<float>``, ``<path>`` and choices stay, they tell what to type.
_NOISE_TAG = re.compile(r" <(?:str|bool|list\[\w+\])>")


class _Command(TyperCommand):
    """A command whose option list leaves out the uninformative type tags."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                rows.append((_NOISE_TAG.sub("", record[0]), record[1]))
        if rows:
            with formatter.section("Options"):
                formatter.write_dl(rows)


class BootcampTyper(typer.Typer):
    """``typer.Typer`` whose commands use :class:`_Command` unless told otherwise."""

    def command(self, *args: Any, cls: Any = None, **kwargs: Any) -> Any:
        return super().command(*args, cls=cls or _Command, **kwargs)


app = BootcampTyper(
    cls=_Commands,
    name="bootcamp",
    help="Run agents on executable, verifiable tasks; record, mine, export and train.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # Help uses the terminal's width up to 120 columns (click stops at 80), so the command
    # list shows each command's whole first sentence instead of cutting it with "...".
    context_settings={"max_content_width": 120},
)
# NO_COLOR (https://no-color.org) turns off every ANSI style, bold included.
_PLAIN = {"color_system": None} if os.environ.get("NO_COLOR") else {}
# Piped output (logs, CI) gets wide tables instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 160, **_PLAIN)  # type: ignore[arg-type]
err = Console(stderr=True, soft_wrap=True, **_PLAIN)  # type: ignore[arg-type]


def above_zero(value: float | None) -> float | None:
    """Option callback for a quantity that must be positive (seconds, rates, epsilons):
    Typer's ``min`` cannot exclude zero."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value:g} is not above 0")
    return value


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one error line and return the exit to raise (``raise fail(...)``).

    The message is escaped: brackets in it (``agentharness[train]``) are text, not markup.
    """
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(code)


def task_values(
    option: str, specs: list[str], parse: Callable[[str], T | None], form: str
) -> dict[str, T]:
    """``option TASK=VALUE`` values as ``{task: value}``: each task known, each value read by
    ``parse`` (``None``: malformed, and the error shows ``form``, e.g. ``TASK=TURNS ...``)."""
    from agentharness.core.registry import UnknownTaskError, get_task

    values: dict[str, T] = {}
    for spec in specs:
        task, _, text = (part.strip() for part in spec.partition("="))
        value = parse(text) if task else None
        if value is None:
            raise fail(f"{option} {spec!r}: write {form}")
        try:
            get_task(task)
        except UnknownTaskError as e:
            raise fail(f"{option} {spec!r}: {e}") from e
        values[task] = value
    return values


def warn(message: str) -> None:
    """Print one warning line on stderr (escaped like :func:`fail`)."""
    err.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    warn(str(message))


@app.callback()
def _every_command() -> None:
    """Run agents on executable, verifiable tasks; record, mine, export and train."""
    # Library warnings (a skipped corrupt line, ...) reach the terminal as one line each.
    warnings.showwarning = _one_line_warning
