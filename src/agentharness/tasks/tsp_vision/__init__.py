"""tsp_vision: the travelling salesman on a map image.

The agent sees a rendered map: a coordinate grid with labelled city dots. The
coordinates appear only in the image. It checks tours with ``tour_length`` (the total
length only, and at most ``max_checks`` times per episode: per-leg lengths, crossing
legs or many totals solved by least squares would give the geometry away without the
map), may look at a route drawn on the map with ``show_tour`` (crossings are seen
there), and answers with ``submit_tour``. The instance data is typed in
:mod:`~agentharness.tasks.tsp_vision.problem` (``Public``: the labels and how the map is
drawn; ``Hidden``: the coordinates and the optimal tour).

Reward (v3): with ``gap`` = submitted length / optimal length - 1, re-computed from the
hidden coordinates against the optimal (Held-Karp, up to 16 cities) or best-known
(multi-start 2-opt + or-opt) length, the score is ``max(0, 1 - gap / tolerance)``:
1 for an optimal tour, falling linearly to 0 at the difficulty's tolerance (10% easy,
8% medium, 6% hard); 0 for no valid tour. Success is a gap of at most 1%. (v2 paid
``optimal / length``, which gave any tour 0.44-0.77; v3 pays only for planning from
the map.) Harder difficulties have more cities (8, 11, 16) and a narrower tolerance.
"""

from agentharness.tasks.tsp_vision.task import TASK

__all__ = ["TASK"]
