"""Run directories, the versioned episode log, and the one reader of runs and instances files."""

from agentharness.store.instances import read_instances, write_instances
from agentharness.store.reader import LoadedRuns, load_runs, named_run_dirs
from agentharness.store.run import CorruptLineWarning, RunDir, RunDirError
from agentharness.store.schema import SCHEMA_VERSION, EpisodeRecord, Timings
from agentharness.store.summary import RunSummary, TaskSummary, summarize

__all__ = [
    "SCHEMA_VERSION",
    "CorruptLineWarning",
    "EpisodeRecord",
    "LoadedRuns",
    "RunDir",
    "RunDirError",
    "RunSummary",
    "TaskSummary",
    "Timings",
    "load_runs",
    "named_run_dirs",
    "read_instances",
    "summarize",
    "write_instances",
]
