"""Reading run directories for the loop stages, with clear errors for bad input.

Every stage takes episode records; this module turns the run directories a user names
into records, and turns what can go wrong (a missing directory, a directory that is not
a run, a run with no readable episode, a truncated last line, task versions that cannot
be pooled) into plain messages. Corrupt lines are skipped and reported, never fatal.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentharness.core.registry import split_task_id
from agentharness.store.run import CorruptLineWarning, RunDir, RunDirError
from agentharness.store.schema import EpisodeRecord


class LoopInputError(ValueError):
    """Input a loop stage cannot use; the message says what is wrong and how to fix it."""


@dataclass
class LoadedRuns:
    """Records read from one or more run directories, plus what was skipped."""

    records: list[EpisodeRecord]
    paths: list[Path]
    warnings: list[str] = field(default_factory=list)
    duplicates: int = 0


def load_run(
    path: str | Path, *, resolve_images: bool = False, allow_empty: bool = False
) -> LoadedRuns:
    """Read one run directory; see :func:`load_runs`."""
    return load_runs([path], resolve_images=resolve_images, allow_empty=allow_empty)


def load_runs(
    paths: Sequence[str | Path], *, resolve_images: bool = False, allow_empty: bool = False
) -> LoadedRuns:
    """Read every episode of ``paths``, in order, skipping corrupt lines with a warning.

    An episode id seen twice (the same run passed twice, or overlapping runs) is kept
    once. Raises :class:`LoopInputError` for a missing or foreign directory, and for a
    run with no readable episode unless ``allow_empty``.
    """
    if not paths:
        raise LoopInputError("no run directories given")
    out = LoadedRuns(records=[], paths=[Path(p) for p in paths])
    seen: set[str] = set()
    for path in out.paths:
        run = RunDir(path)
        try:
            run.check()
        except RunDirError as e:
            raise LoopInputError(str(e)) from e
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                records = list(run.episodes(resolve_images=resolve_images))
            except RunDirError as e:
                raise LoopInputError(str(e)) from e
            except FileNotFoundError as e:
                raise LoopInputError(f"{path}: an image the log refers to is missing: {e}") from e
        skipped = [str(w.message) for w in caught if issubclass(w.category, CorruptLineWarning)]
        for w in caught:
            if not issubclass(w.category, CorruptLineWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        out.warnings.extend(skipped)
        if not records and not allow_empty:
            if skipped:
                raise LoopInputError(
                    f"{path}: none of the lines of {run.episodes_path.name} is an episode record "
                    f"({len(skipped)} skipped; first: {skipped[0]}). Is it a run directory made by "
                    "`bootcamp eval`?"
                )
            raise LoopInputError(f"{path} holds no episodes yet; run `bootcamp eval --out {path}`")
        for r in records:
            if r.episode_id in seen:
                out.duplicates += 1
                continue
            seen.add(r.episode_id)
            out.records.append(r)
    if out.duplicates:
        out.warnings.append(
            f"{out.duplicates} episode(s) appeared more than once across the runs; each is counted once"
        )
    return out


def task_versions(records: Iterable[EpisodeRecord]) -> dict[str, list[str]]:
    """Task name -> the versioned ids seen for it (sorted)."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for r in records:
        by_name[split_task_id(r.task)[0]].add(r.task)
    return {name: sorted(ids) for name, ids in sorted(by_name.items())}


def mixed_versions(records: Iterable[EpisodeRecord]) -> str | None:
    """A message naming tasks present in more than one version, or ``None``."""
    mixed = {n: ids for n, ids in task_versions(records).items() if len(ids) > 1}
    if not mixed:
        return None
    listed = "; ".join(", ".join(ids) for ids in mixed.values())
    return (
        f"the runs mix task versions ({listed}); versions differ in instances and rewards, "
        "so they are kept apart (every figure is per versioned task id)"
    )


__all__ = [
    "LoadedRuns",
    "LoopInputError",
    "load_run",
    "load_runs",
    "mixed_versions",
    "task_versions",
]
