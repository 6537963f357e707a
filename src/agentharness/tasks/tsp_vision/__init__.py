"""tsp_vision: the travelling salesman on a map image.

The agent sees a rendered map: a coordinate grid with labelled city dots. The
coordinates appear only in the image. It checks tours with ``tour_length`` (total
length and crossing legs; per-leg lengths would give distances away, and the positions
are meant to be read from the image), may look at a route drawn on the map with
``show_tour``, and answers with ``submit_tour``. The reward is the optimal (Held-Karp,
up to 16 cities) or best-known (multi-start 2-opt + or-opt) length divided by the
submitted tour's length, re-computed from the hidden coordinates; 0 for no valid tour.
Harder difficulties have more cities.
"""

from agentharness.tasks.tsp_vision.task import TASK

__all__ = ["TASK"]
