"""Shared pieces of the exporters: reading runs safely, version checks, image files.

Every exporter is a pure function of its input records (plus the output location, for
image files): the same runs always give the same rows in the same order.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentharness.core.messages import ImagePart, Message, TextPart
from agentharness.core.registry import split_task_id
from agentharness.store.run import CorruptLineWarning, RunDir, RunDirError
from agentharness.store.schema import EpisodeRecord


class ExportError(ValueError):
    """Input an exporter cannot use; the message says what was wrong and how to fix it."""


def task_name(task_id: str) -> str:
    """``escape_room-v1`` -> ``escape_room``."""
    return split_task_id(task_id)[0]


def load_runs(
    run_dirs: Iterable[str | Path], *, resolve_images: bool = False
) -> list[EpisodeRecord]:
    """Every readable episode of ``run_dirs``, in order; clear errors for unusable input.

    A missing path, a file, or a directory without ``episodes.jsonl`` raises
    :class:`ExportError`; so does a run in which no line is an episode record (a
    foreign ``episodes.jsonl``). Corrupt or truncated lines are skipped with a
    :class:`~agentharness.store.run.CorruptLineWarning`, never fatal.
    """
    paths = [Path(p) for p in run_dirs]
    if not paths:
        raise ExportError(
            "no run directories given; pass one or more directories made by `bootcamp eval`"
        )
    records: list[EpisodeRecord] = []
    for path in paths:
        run = RunDir(path)
        skipped = 0
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", CorruptLineWarning)
                found = list(run.episodes(resolve_images=resolve_images))
        except RunDirError as e:
            raise ExportError(str(e)) from e
        except FileNotFoundError as e:
            raise ExportError(
                f"{path}: an image the log refers to is missing ({e.filename})"
            ) from e
        for w in caught:
            if issubclass(w.category, CorruptLineWarning):
                skipped += 1
            # Re-emit so callers (and the CLI) still see every skipped line.
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if not found and skipped:
            raise ExportError(
                f"{path} holds no episode records ({skipped} unreadable lines); "
                "is it a run directory made by `bootcamp eval`?"
            )
        if not found:
            raise ExportError(f"{path} has no episodes yet (its {run.episodes_path.name} is empty)")
        records.extend(found)
    return records


def version_mix(task_ids: Iterable[str]) -> dict[str, list[str]]:
    """Task names that appear under more than one version: ``{name: [ids...]}``."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for task_id in task_ids:
        by_name[task_name(task_id)].add(task_id)
    return {name: sorted(ids) for name, ids in sorted(by_name.items()) if len(ids) > 1}


def check_versions(task_ids: Iterable[str], *, allow_mixed: bool = False) -> None:
    """Refuse task ids (of records or instances) that mix versions of one task, unless ``allow_mixed``.

    Versions of a task differ in instances, tools or rewards, so mixing them in one
    training set is usually a mistake; with ``allow_mixed`` every row keeps its
    versioned task id and only a warning is given.
    """
    mixed = version_mix(task_ids)
    if not mixed:
        return
    listed = "; ".join(f"{name}: {', '.join(ids)}" for name, ids in mixed.items())
    message = f"the runs mix versions of a task ({listed})"
    if not allow_mixed:
        raise ExportError(
            f"{message}; export each version separately, or pass --allow-mixed-versions "
            "to keep them all (every row carries its versioned task id)"
        )
    warnings.warn(f"{message}; every row keeps its versioned task id", UserWarning, stacklevel=2)


class ImageStore:
    """Writes PNG bytes once each under ``directory`` (named by content hash).

    Returns absolute paths, which PIL, ``datasets.Image`` and transformers'
    ``load_image`` all open as they are.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def put(self, png: bytes) -> str:
        name = hashlib.sha256(png).hexdigest()[:32] + ".png"
        target = self.directory / name
        if not target.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            target.write_bytes(png)
        return str(target.resolve())


def image_ref(part: ImagePart, store: ImageStore | None) -> str:
    """Where an image of a message goes in an exported row.

    With a store the inline PNG is written to a file and its path returned; without one
    the ``data:`` URL is kept (transformers' ``load_image`` reads those too).
    """
    png = part.png_bytes()
    if png is None:
        url = part.image_url.url
        if url.startswith("file:"):
            raise ExportError(
                "an image is still a run-relative file reference; read runs with resolve_images=True"
            )
        return url
    if store is None:
        return part.image_url.url
    return store.put(png)


def prompt_messages(record: EpisodeRecord) -> list[Message]:
    """The opening messages of an episode: everything before the first assistant turn."""
    out: list[Message] = []
    for m in record.messages:
        if m.role == "assistant":
            break
        out.append(m)
    return out


def parse_arguments(arguments: str) -> Any:
    """Tool-call arguments as a JSON value (a dict when well formed), else the raw string."""
    try:
        return json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return arguments


def text_of(message: Message, image_placeholder: str) -> str:
    """The message's text with each image replaced by ``image_placeholder``."""
    if isinstance(message.content, list):
        return "\n".join(
            p.text if isinstance(p, TextPart) else image_placeholder for p in message.content
        )
    return message.content or ""


def write_jsonl(rows: Iterable[dict[str, Any]], out: Path) -> int:
    """Write rows as JSON Lines (UTF-8, one object per line); returns the count."""
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(out, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
            n += 1
    return n
