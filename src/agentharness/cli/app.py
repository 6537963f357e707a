"""The shared ``bootcamp`` Typer app and console helpers used by every command module."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

app = typer.Typer(
    name="bootcamp",
    help="Run agents on executable, verifiable tasks; record, mine, export and train.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Piped output (logs, CI) gets wide tables instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)
