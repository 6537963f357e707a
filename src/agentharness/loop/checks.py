"""What the loop stages check of their inputs beyond reading them.

Runs are read by :func:`agentharness.store.load_runs` (unusable input is a
:class:`~agentharness.store.run.RunDirError`); :class:`LoopInputError` is for inputs that
are readable but do not fit the stage: settings that contradict each other or a loop
directory, runs that cannot be compared.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentharness.core.registry import group_versions
from agentharness.store.schema import EpisodeRecord


class LoopInputError(ValueError):
    """Input a loop stage cannot use; the message says what is wrong and how to fix it."""


def mixed_versions(records: Iterable[EpisodeRecord]) -> str | None:
    """A message naming tasks present in more than one version, or ``None``."""
    mixed = {n: ids for n, ids in group_versions(r.task for r in records).items() if len(ids) > 1}
    if not mixed:
        return None
    listed = "; ".join(", ".join(ids) for ids in mixed.values())
    return (
        f"the runs mix task versions ({listed}); versions differ in instances and rewards, "
        "so they are kept apart (every figure is per versioned task id)"
    )


__all__ = ["LoopInputError", "mixed_versions"]
