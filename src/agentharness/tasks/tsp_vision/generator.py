"""Layer 1: random city maps built around their optimal (or best-known) tour."""

from __future__ import annotations

import math
import string

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem
from agentharness.tasks.tsp_vision import render, simulator
from agentharness.tasks.tsp_vision.config import TspVisionConfig
from agentharness.tasks.tsp_vision.interaction import BUDGETS
from agentharness.tasks.tsp_vision.problem import Hidden, Public

LABELS = string.ascii_uppercase
MAX_DRAWS = 50

SYSTEM = (
    "You solve travelling-salesman problems shown as map images. Read the city positions "
    "from the picture, plan a short closed tour, check it with the tools, and finish by "
    "calling submit_tour. Call tools; do not just describe what you would do."
)


class GenerationError(RuntimeError):
    """No valid map could be drawn for a config (should not happen for valid configs)."""


class TspVisionGenerator:
    """Draws well-separated integer cities, solves the tour and keeps it as hidden truth."""

    def generate(self, config: TspVisionConfig, seed: int) -> Problem:
        border = max(1, round(config.grid_size * 0.05))
        for draw in range(MAX_DRAWS):
            # An independent stream per draw keeps redraws deterministic.
            rng = np.random.default_rng([seed, draw])
            cities = simulator.sample_cities(
                rng, config.n_cities, config.grid_size, config.min_separation, border
            )
            if cities is None:
                continue
            tour, length, method = simulator.solve(cities, rng)
            if not _verified(cities, tour, length):
                continue
            labels = tuple(LABELS[: config.n_cities])
            public = Public(
                labels=labels,
                n_cities=config.n_cities,
                grid_size=config.grid_size,
                show_grid=config.show_grid,
                image_size=config.image_size,
            )
            hidden = Hidden(
                cities=tuple(cities),
                solution=tuple(labels[i] for i in tour),
                optimal_length=length,
                method=method,
                exact=method == "held-karp",
            )
            return Problem(
                public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json")
            )
        raise GenerationError(f"could not draw a valid map for seed {seed} with {config}")

    def prompt(self, instance: Instance) -> list[Message]:
        pub = instance.public_as(Public)
        labels = pub.labels
        n, g = pub.n_cities, pub.grid_size
        step, minor = render.grid_steps(g)
        if not pub.show_grid:
            grid = f"labelled ticks every {step} units on the axes"
        elif minor:
            grid = f"light grid lines every {minor} units and labelled ticks every {step}"
        else:
            grid = f"grid lines and labelled ticks every {step} units"
        png = render.map_png(
            instance.hidden_as(Hidden).cities, labels, g, pub.image_size, pub.show_grid
        )
        example = ", ".join(f'"{x}"' for x in labels[:3])
        cfg = TspVisionConfig.model_validate(instance.config)
        checks, tolerance = cfg.max_checks, cfg.tolerance
        text = (
            f"The map shows {n} cities labelled {labels[0]} to {labels[-1]}. Their positions "
            f"appear only in the image: x grows to the right and y grows upwards, from 0 to "
            f"{g} on both axes, with {grid}. Every city sits on integer coordinates.\n\n"
            "Find the shortest closed tour that visits every city exactly once and returns "
            "to its start. Distances are straight lines (Euclidean) in grid units.\n\n"
            "Tools:\n"
            f"- tour_length(order): checks a tour and reports its total length; at most "
            f"{checks} checks per episode, so plan the tour from the map first.\n"
            "- show_tour(order): returns the map with your route drawn on it (a partial route "
            "is fine); use it to spot crossing legs (a shortest tour never crosses itself).\n"
            "- submit_tour(order): your final answer; it ends the episode.\n\n"
            f"Answer format: `order` is a list of all {n} labels, each exactly once, e.g. "
            f"[{example}, ...]. The return to the first city is implied; any start and either "
            "direction are fine.\n"
            f"Score: 1.0 for an optimal tour, falling linearly to 0 for a tour "
            f"{100 * tolerance:g}% longer than the shortest possible; 0 without a valid "
            f"submitted tour. You have at most {BUDGETS.max_turns} turns."
        )
        return [system(SYSTEM), user(text, images=[png])]


def _verified(cities: list[simulator.Point], tour: list[int], length: float) -> bool:
    """The stored tour is a permutation, its length re-computes and it never crosses."""
    if sorted(tour) != list(range(len(cities))):
        return False
    if not math.isclose(simulator.tour_length(cities, tour), length, rel_tol=1e-9):
        return False
    return not simulator.crossing_edges(cities, tour)
