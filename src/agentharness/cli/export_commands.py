"""`bootcamp export sft|rl|groups`: run directories as training data (registered in cli/main.py).

The formats are documented in :mod:`agentharness.export.sft` and :mod:`agentharness.export.rl`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import typer

from agentharness.cli.app import BootcampTyper, above_zero, app, console, fail, task_values, warn

T = TypeVar("T")

export_app = BootcampTyper(
    help="Export runs as training data (SFT JSONL, RL prompts for verl / TRL, GRPO groups) "
    "or as an inspect_ai log.",
    short_help="Export runs as training data (SFT, RL, GRPO groups) or an inspect_ai log.",
    no_args_is_help=True,
)
app.add_typer(export_app, name="export")

RunsArg = Annotated[
    list[Path], typer.Argument(help="run directories (made by `bootcamp eval`)", show_default=False)
]
OutOpt = Annotated[
    Path, typer.Option("-o", "--out", help="file to write", show_default=False, dir_okay=False)
]
MixedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-mixed-versions",
        help="accept runs that mix versions of a task (rows keep their ids)",
    ),
]


def _run(action: Callable[[], T]) -> T:
    """Run an export; warnings (skipped lines, ...) go to stderr, bad input to a clean exit."""
    from agentharness.export.common import ExportError
    from agentharness.store.run import RunDirError

    error: ExportError | RunDirError | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = action()
        except (ExportError, RunDirError) as e:
            error = e
    for w in caught:
        if not issubclass(w.category, DeprecationWarning | FutureWarning):
            warn(str(w.message))
    if error is not None:
        raise fail(str(error)) from error
    return result


@export_app.command("sft")
def export_sft_command(
    runs: RunsArg,
    out: OutOpt,
    per_turn: Annotated[
        bool, typer.Option("--per-turn", help="one prompt/completion row per assistant turn")
    ] = False,
    tool_format: Annotated[
        Literal["native", "text"],
        typer.Option(
            help="native: tool_calls + tools column; text: as the local agent sees it "
            "(<tool_call> text, schemas in the system prompt)"
        ),
    ] = "native",
    no_images: Annotated[
        bool, typer.Option("--no-images", help="replace images with a text placeholder")
    ] = False,
    split_modality: Annotated[
        bool,
        typer.Option(
            "--split-modality",
            help="write text-only rows to OUT_STEM.text.jsonl and image rows to "
            "OUT_STEM.vision.jsonl instead of one mixed file",
        ),
    ] = False,
    allow_mixed_versions: MixedOpt = False,
) -> None:
    """Conversational JSONL (messages + tools [+ images]) for HF datasets and TRL's SFTTrainer."""
    from agentharness.export.sft import export_sft, images_dir_for, modality_paths

    n = _run(
        lambda: export_sft(
            runs,
            out,
            per_turn=per_turn,
            tool_format=tool_format,
            images=not no_images,
            allow_mixed_versions=allow_mixed_versions,
            split_modality=split_modality,
        )
    )
    if split_modality:
        written = [p for p in modality_paths(out) if p.is_file()]
        console.print(f"wrote {n} rows to {' and '.join(map(str, written))}")
    else:
        console.print(f"wrote {n} rows to {out}")
    if images_dir_for(out).is_dir():
        console.print(f"images in {images_dir_for(out)}")


def _task_turns(specs: list[str]) -> dict[str, int]:
    """``--task-turns TASK=TURNS`` values as ``{task: turns}``."""
    return task_values(
        "--task-turns",
        specs,
        lambda text: int(text) if text.isdigit() and int(text) >= 1 else None,
        "TASK=TURNS with a whole number of at least 1, e.g. robot_reach-v7=8",
    )


@export_app.command("rl")
def export_rl_command(
    out: OutOpt,
    runs: Annotated[
        list[Path] | None,
        typer.Argument(help="run directories (or use --instances)", show_default=False),
    ] = None,
    instances: Annotated[
        Path | None, typer.Option(help="instances JSONL (from `bootcamp generate` or `synth`)")
    ] = None,
    format: Annotated[
        Literal["verl", "trl"],
        typer.Option("--format", help="verl (parquet + tool/interaction YAML) or trl (JSONL)"),
    ] = "verl",
    split: Annotated[str, typer.Option(help="split name stored in verl's extra_info")] = "train",
    task_turns: Annotated[
        list[str] | None,
        typer.Option(
            "--task-turns",
            help="TASK=TURNS (repeatable): the turn budget that task's rows play under in the "
            "trainer, e.g. the held-out budget `eval --max-turns` used (default: the task's)",
            show_default=False,
        ),
    ] = None,
    allow_mixed_versions: MixedOpt = False,
) -> None:
    """RL prompts with everything the reward needs (the serialized instance)."""
    from agentharness.export.rl import export_rl
    from agentharness.export.verl import config_paths

    if bool(runs) == (instances is not None):
        raise fail("give run directories or --instances FILE (one of them)")
    suffix = out.suffix.lower()
    if (format == "trl" and suffix == ".parquet") or (
        format == "verl" and suffix in (".jsonl", ".json")
    ):
        raise fail(
            f"--format {format} writes {'JSONL' if format == 'trl' else 'parquet'}; "
            f"name the output accordingly (got {out.name})"
        )
    turns = _task_turns(task_turns or [])
    loaded = None
    if instances is not None:
        from agentharness.store.instances import read_instances

        loaded = _run(lambda: read_instances(instances))
    n = _run(
        lambda: export_rl(
            runs or None,
            out,
            instances=loaded,
            format=format,
            split=split,
            allow_mixed_versions=allow_mixed_versions,
            task_turns=turns,
        )
    )
    console.print(f"wrote {n} prompts to {out}")
    if format == "verl":
        tools_yaml, interaction_yaml = config_paths(out)
        console.print(
            f"verl tool config: {tools_yaml}\n"
            f"verl interaction config (read by verl <= 0.7 only): {interaction_yaml}"
        )


@export_app.command("inspect")
def export_inspect_command(
    runs: RunsArg,
    out: Annotated[
        Path,
        typer.Option("-o", "--out", help="log file to write: .eval or .json", show_default=False),
    ],
    allow_mixed_versions: MixedOpt = False,
) -> None:
    """An inspect_ai eval log (samples, tool calls, scores with the reward breakdown) for `inspect view`."""
    from agentharness.export.inspect_log import export_inspect

    n = _run(lambda: export_inspect(runs, out, allow_mixed_versions=allow_mixed_versions))
    console.print(f"wrote {n} samples to {out}; open it with: inspect view --log-dir {out.parent}")


@export_app.command("groups")
def export_groups_command(
    runs: RunsArg,
    out: OutOpt,
    k: Annotated[
        int | None, typer.Option("-k", min=1, help="keep only groups of exactly k rollouts")
    ] = None,
    eps: Annotated[
        float, typer.Option(callback=above_zero, help="advantage = (r - mean) / (std + eps)")
    ] = 1e-6,
    allow_mixed_versions: MixedOpt = False,
) -> None:
    """GRPO groups (JSONL): k rollouts per instance, rewards, normalized advantages."""
    from agentharness.export.rl import export_groups

    n = _run(
        lambda: export_groups(runs, out, k=k, eps=eps, allow_mixed_versions=allow_mixed_versions)
    )
    console.print(f"wrote {n} groups to {out}")
