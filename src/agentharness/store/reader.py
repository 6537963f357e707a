"""The one reader of whole runs: run directories a user names, as episode records.

Every consumer of finished runs (the loop stages, the exporters, ``bootcamp report`` and
its HTML form) reads them through :func:`load_runs`, so they agree on what a run holds:

* corrupt, truncated or foreign lines are skipped and listed in
  :attr:`LoadedRuns.warnings`, never fatal;
* an episode id met twice (the same run named twice, overlapping runs) is kept once;
* input that cannot be used at all raises :class:`~agentharness.store.run.RunDirError`
  with a message that says what to fix: no paths, a missing or foreign directory, a log
  from a newer agentharness, a run with no readable episode (unless ``allow_empty``).

The viewer reads runs lazily instead (:meth:`RunDir.scan <agentharness.store.run.RunDir.scan>`
and :meth:`RunDir.episode_at <agentharness.store.run.RunDir.episode_at>`, one line at a
time); it finds and names them with :func:`named_run_dirs`, as the HTML report does.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentharness.store.run import EPISODES, CorruptLineWarning, RunDir, RunDirError, find_run_dirs
from agentharness.store.schema import EpisodeRecord


@dataclass
class LoadedRuns:
    """Episodes read from one or more run directories, and what was passed over."""

    records: list[EpisodeRecord]
    paths: list[Path]
    warnings: list[str] = field(default_factory=list)  # one line each, for people
    skipped: int = 0  # corrupt or foreign lines passed over
    duplicates: int = 0  # episodes met again and left out

    def emit_warnings(self) -> LoadedRuns:
        """Say each of :attr:`warnings` through the warnings module, a skipped line as a
        :class:`CorruptLineWarning` (for library callers such as the exporters, whose only
        channel it is); returns ``self``."""
        for i, message in enumerate(self.warnings):
            category = CorruptLineWarning if i < self.skipped else UserWarning
            warnings.warn(message, category, stacklevel=3)
        return self


def load_runs(
    paths: Sequence[str | Path], *, resolve_images: bool = False, allow_empty: bool = False
) -> LoadedRuns:
    """Every readable episode of the run directories ``paths``, in order; see the module doc.

    ``resolve_images`` puts each image's PNG back into its message (exporters need it);
    ``allow_empty`` accepts a run with no readable episode (a stage that may legitimately
    have produced none). Raises :class:`RunDirError` for input that cannot be used.
    """
    if not paths:
        raise RunDirError(
            "no run directories given; pass one or more directories made by `bootcamp eval`"
        )
    out = LoadedRuns(records=[], paths=[Path(p) for p in paths])
    seen: set[str] = set()
    for path in out.paths:
        run = RunDir(path)
        skipped: list[str] = []
        try:
            records = list(run.episodes(resolve_images=resolve_images, on_skip=skipped.append))
        except FileNotFoundError as e:  # removed while being read
            raise RunDirError(f"{path}: a file of the run is missing ({e.filename})") from e
        out.warnings.extend(skipped)
        out.skipped += len(skipped)
        if not records and not allow_empty:
            if skipped:
                raise RunDirError(
                    f"{path}: none of the lines of {EPISODES} is an episode record "
                    f"({len(skipped)} skipped; first: {skipped[0]}). Is it a run directory made "
                    "by `bootcamp eval`?"
                )
            raise RunDirError(f"{path} has no episodes yet (its {EPISODES} is empty)")
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


def named_run_dirs(paths: Sequence[str | Path]) -> list[tuple[str, Path]]:
    """Every run directory in ``paths`` (each a run, or a loop directory holding runs up to
    three levels down), with the name reports and the viewer give it: the directory's own
    name for a run, the path relative to the loop directory for a run inside one (a name
    met twice gets ``#2``, ``#3``...). Raises :class:`RunDirError` when a path is missing,
    not a directory, or holds no run."""
    if not paths:
        raise RunDirError("no run directories given; pass directories made by `bootcamp eval`")
    named: list[tuple[str, Path]] = []
    names: set[str] = set()
    for path in map(Path, paths):
        if not path.exists():
            raise RunDirError(
                f"{path} does not exist; pass a run directory made by `bootcamp eval` "
                "(or a loop directory)"
            )
        if not path.is_dir():
            raise RunDirError(
                f"{path} is not a directory; pass a run directory made by `bootcamp eval` "
                "(or a loop directory)"
            )
        found = find_run_dirs(path)
        if not found:
            raise RunDirError(
                f"{path} holds no run directory (no {EPISODES} up to three levels down); "
                "make one with `bootcamp eval --out`"
            )
        for d in found:
            name = path.resolve().name if d == path else d.relative_to(path).as_posix()
            base, n = name, 2
            while name in names:
                name, n = f"{base}#{n}", n + 1
            names.add(name)
            named.append((name, d))
    return named


__all__ = ["LoadedRuns", "load_runs", "named_run_dirs"]
