"""Shared pieces of the exporters: version checks, image files, message helpers.

Exporters read runs with :func:`agentharness.store.load_runs` (unusable input raises
:class:`~agentharness.store.run.RunDirError`; skipped lines are said as
:class:`~agentharness.store.run.CorruptLineWarning`). Every exporter is a pure function of
its input records (plus the output location, for image files): the same runs always give
the same rows in the same order.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentharness.core.messages import ImagePart, Message, TextPart
from agentharness.core.registry import group_versions, split_task_id
from agentharness.store.run import atomic_open
from agentharness.store.schema import EpisodeRecord


class ExportError(ValueError):
    """Readable input an exporter cannot use (mixed task versions, a bad format, groups of
    the wrong size...); the message says what was wrong and how to fix it."""


def task_name(task_id: str) -> str:
    """``escape_room-v1`` -> ``escape_room``."""
    return split_task_id(task_id)[0]


def check_versions(task_ids: Iterable[str], *, allow_mixed: bool = False) -> None:
    """Refuse task ids (of records or instances) that mix versions of one task, unless ``allow_mixed``.

    Versions of a task differ in instances, tools or rewards, so mixing them in one
    training set is usually a mistake; with ``allow_mixed`` every row keeps its
    versioned task id and only a warning is given.
    """
    mixed = {n: ids for n, ids in group_versions(task_ids).items() if len(ids) > 1}
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
    """Write rows as JSON Lines (UTF-8, one object per line); returns the count.

    Rows stream through :func:`~agentharness.store.run.atomic_open`: if making a row
    fails, an earlier ``out`` is left as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with atomic_open(out) as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
            n += 1
    return n
