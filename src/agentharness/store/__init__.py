"""Run directories and the versioned episode log."""

from agentharness.store.run import CorruptLineWarning, RunDir, RunDirError, read_runs
from agentharness.store.schema import SCHEMA_VERSION, EpisodeRecord, Timings

__all__ = [
    "SCHEMA_VERSION",
    "CorruptLineWarning",
    "EpisodeRecord",
    "RunDir",
    "RunDirError",
    "Timings",
    "read_runs",
]
