"""``bootcamp view``: a local web viewer of run directories (see :mod:`agentharness.view.server`)."""

from agentharness.view.index import EpisodeSummary, RunIndex, open_runs
from agentharness.view.server import ViewerApp, make_server

__all__ = ["EpisodeSummary", "RunIndex", "ViewerApp", "make_server", "open_runs"]
