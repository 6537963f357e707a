"""Instances files: JSONL, one :class:`~agentharness.core.instance.Instance` a line.

``bootcamp generate`` and ``bootcamp synth`` write them, ``eval --instances``, ``export rl
--instances``, the loop and ``train grpo`` read them, all through :func:`read_instances`.
It also reads TRL RL rows (``{"instance": ...}``, what ``bootcamp export rl --format trl``
writes), so a training file and the instances it came from read the same.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from pathlib import Path

from agentharness.core.instance import Instance
from agentharness.core.registry import UnknownTaskError, get_task
from agentharness.store.run import CorruptLineWarning, RunDirError, atomic_write_text


def write_instances(path: Path, instances: Iterable[Instance]) -> None:
    """Instances as JSONL (one per line), written atomically."""
    atomic_write_text(Path(path), "".join(i.model_dump_json() + "\n" for i in instances))


def _instance_of(line: str) -> Instance:
    row = json.loads(line)
    raw = row.get("instance", row) if isinstance(row, dict) else row
    if isinstance(raw, str):
        return Instance.model_validate_json(raw)
    return Instance.model_validate(raw)


def read_instances(
    path: Path, *, check_tasks: bool = True, allow_empty: bool = False
) -> list[Instance]:
    """The instances of a JSONL file of instances or of RL rows carrying one.

    A line that is neither is skipped with a :class:`CorruptLineWarning`. Raises
    :class:`RunDirError` when the file does not exist, holds no readable instance (unless
    ``allow_empty``: a stage that may have produced none), or (with ``check_tasks``) names
    a task that is not registered.
    """
    path = Path(path)
    if path.is_dir():
        raise RunDirError(
            f"{path} is a directory; pass an instances file in it (JSONL, one instance a line)"
        )
    if not path.is_file():
        raise RunDirError(
            f"instances file {path} does not exist (make one with `bootcamp generate` or "
            "`bootcamp synth`)"
        )
    instances: list[Instance] = []
    first_skipped: str | None = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                instances.append(_instance_of(line))
            except (ValueError, RecursionError) as e:
                reason = (
                    f"{path}:{lineno}: skipped a line that is neither an RL row with an "
                    f"'instance' nor an instance ({str(e).splitlines()[0][:120]})"
                )
                first_skipped = first_skipped or reason
                warnings.warn(reason, CorruptLineWarning, stacklevel=2)
    if not instances and not (allow_empty and first_skipped is None):
        raise RunDirError(
            f"{path} holds no readable instances" + (f" ({first_skipped})" if first_skipped else "")
        )
    if check_tasks:
        for task in sorted({i.task for i in instances}):
            try:
                get_task(task)
            except UnknownTaskError as e:
                raise RunDirError(f"{path}: {e}") from e
    return instances


__all__ = ["read_instances", "write_instances"]
