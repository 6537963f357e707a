"""Layer 2: the per-episode map and the tools that check, draw and submit tours.

Every result is also data (``ToolResult.data``, never shown to the model; the text says
the same): ``tour_length`` gives the tour, its length (to the text's two decimals), the
shortest length so far and ``checks_left``; once the checks are used up it is an error
whose data has ``checks_left`` 0. ``show_tour`` gives the route drawn, and
``submit_tour`` the tour and its length. Scripted policies read these, not the text.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, World, tool
from agentharness.tasks.tsp_vision import render, simulator
from agentharness.tasks.tsp_vision.config import TspVisionConfig
from agentharness.tasks.tsp_vision.problem import Hidden, Public

Label = Annotated[str, Field(min_length=1, max_length=16)]
Order = Annotated[list[Label], Field(min_length=1, max_length=64)]


class TspVisionWorld(World):
    """One map: hidden city coordinates, the tours tried so far and the best of them."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        pub = instance.public_as(Public)
        self.labels: list[str] = list(pub.labels)
        self.cities: list[simulator.Point] = list(instance.hidden_as(Hidden).cities)
        self.grid_size = pub.grid_size
        self.image_size = pub.image_size
        self.show_grid = pub.show_grid
        self.max_checks = TspVisionConfig.model_validate(instance.config).max_checks
        self.checks = 0
        self.best: tuple[list[str], float] | None = None
        self.submitted_length: float | None = None

    def _tour(self, order: list[str], *, partial: bool = False) -> list[int]:
        norm = simulator.normalize_order(order)
        try:
            return simulator.order_to_indices(norm, self.labels, partial=partial)
        except simulator.TourProblem as e:
            need = "each city at most once" if partial else f"all {len(self.labels)} labels once"
            raise ToolError(
                f"not a valid {'route' if partial else 'tour'}: {e}. Give {need}, using only "
                f"{', '.join(self.labels)}."
            ) from e

    def _keep_best(self, order: list[str], length: float) -> tuple[bool, float]:
        """Keep the shortest valid tour: (whether this one is it, the shortest length)."""
        best = self.best
        if best is None or length < best[1] - 1e-9:
            self.best = (order, length)
            return True, length
        return False, best[1]

    @tool
    def tour_length(self, order: Order) -> ToolResult:
        """Check a closed tour: its total length (a few checks per episode; see the prompt).

        Args:
            order: all city labels, each exactly once, in visiting order (e.g. ["A", "C", "B"]);
                the return to the first city is implied.
        """
        if self.checks >= self.max_checks:
            # An error the policies can tell apart from a bad tour: ``checks_left`` is 0.
            return ToolResult(
                text=f"Error: no tour_length checks left (you had {self.max_checks}). Draw "
                "routes with show_tour to compare them on the map, and call submit_tour with "
                "your best tour.",
                data={"checks_left": 0, "max_checks": self.max_checks},
                is_error=True,
            )
        tour = self._tour(order)
        self.checks += 1
        length = simulator.tour_length(self.cities, tour)
        names = [self.labels[i] for i in tour]
        shortest, best = self._keep_best(names, length)
        note = (
            "This is your shortest valid tour so far."
            if shortest
            else f"Your shortest valid tour so far has length {best:.2f}."
        )
        left = self.max_checks - self.checks
        # Only the total, and only a few times: per-leg lengths, crossing legs or many
        # totals (least squares over tours) would give the geometry away without the map.
        text = (
            f"Valid tour of {len(tour)} cities. Total length: {length:.2f}.\n{note} "
            f"{left} tour_length check{'s' if left != 1 else ''} left."
        )
        data = {
            "order": names,
            "cities": len(tour),
            "length": round(length, 2),
            "shortest_so_far": shortest,
            "best_length": round(best, 2),
            "checks_left": left,
        }
        return ToolResult(text=text, data=data, metrics={"tour_length": length})

    @tool
    def show_tour(self, order: Order) -> ToolResult:
        """Draw a route on the map and return the image; a partial route is drawn open.

        Args:
            order: city labels in visiting order, each at most once; with all cities the
                route is closed back to the first one.
        """
        path = self._tour(order, partial=True)
        closed = len(path) == len(self.labels)
        png = render.tour_png(
            self.cities, self.labels, self.grid_size, self.image_size, self.show_grid, path, closed
        )
        names = [self.labels[i] for i in path]
        missing = [lab for lab in self.labels if lab not in names]
        if closed:
            desc = f"closed tour {' -> '.join(names)} -> {names[0]}"
        else:
            desc = (
                f"open route {' -> '.join(names)} ({len(path)} of {len(self.labels)} cities; "
                f"not yet visited: {', '.join(missing)})"
            )
        return ToolResult(
            text=f"The map with your {desc} drawn in red; the green ring marks the start.",
            data={"route": names, "closed": closed, "not_visited": missing},
            images=(png,),
        )

    @tool(final=True)
    def submit_tour(self, order: Order) -> ToolResult:
        """Submit your final tour; this ends the episode.

        Args:
            order: all city labels, each exactly once, in visiting order; the return to
                the first city is implied.
        """
        tour = self._tour(order)
        length = simulator.tour_length(self.cities, tour)
        self.submitted_length = length
        return ToolResult(
            text=f"Tour submitted: {len(tour)} cities, total length {length:.2f}.",
            data={
                "order": [self.labels[i] for i in tour],
                "cities": len(tour),
                "length": round(length, 2),
            },
            metrics={"tour_length": length},
        )
