"""The scripted expert: identify the linear response, solve a small LP, check, submit.

The steady field is linear in the powers (``T = T_amb + G p``), so ``n_heaters``
linearly independent simulations identify the response of every monitor and heater.
The expert reads *all* successful simulations in the conversation (its own and any a
noisy agent interleaved), probes single heaters until the powers span every direction,
fits ``G`` by least squares, then picks the target-hitting powers with the coolest
heater (a linear program), checks them with one simulation and submits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.thermal.problem import Hidden, Public


class ThermalExpert:
    """Privileged solver acting only through ``simulate`` and ``submit_powers``."""

    def __init__(self, instance: Instance) -> None:
        pub = instance.public_as(Public)
        self.n = len(pub.heaters)
        self.m = len(pub.monitors)
        self.p_max = pub.max_power_w
        self.tol = pub.tolerance_k
        self.ambient = pub.plate.ambient_c
        self.limit = pub.safety_limit_c
        self.targets = np.array([mo.target_c for mo in pub.monitors])
        self.fallback = list(instance.hidden_as(Hidden).solution)
        self.turn = 0

    def next_turn(self, messages: list[Message]) -> Message:
        self.turn += 1
        reports = _simulations(messages)
        for rep in reports:
            if rep["safe"] and rep["targets_hit"] == rep["targets_total"]:
                return self._call(
                    "submit_powers",
                    rep["powers_w"],
                    "This simulation hits every target within tolerance and stays below the safety "
                    "limit, so I submit these powers.",
                )
        powers = np.array([r["powers_w"] for r in reports], dtype=float).reshape(-1, self.n)
        probe = self._next_probe(powers)
        if probe is not None:
            j = int(np.argmax(probe))
            return self._call(
                "simulate",
                probe.tolist(),
                f"The steady field is linear in the heater powers. I run heater H{j + 1} alone to "
                "measure how much each monitor and heater warms per watt.",
            )
        rises = (
            np.array(
                [
                    [mo["temperature_c"] for mo in r["monitors"]]
                    + [h["temperature_c"] for h in r["heaters"]]
                    for r in reports
                ],
                dtype=float,
            )
            - self.ambient
        )
        coef, *_ = np.linalg.lstsq(powers, rises, rcond=None)
        g, h = coef[:, : self.m].T, coef[:, self.m :].T
        candidate = self._solve(g, h)
        if candidate is None or any(
            np.allclose(r["powers_w"], candidate, atol=1e-6) for r in reports
        ):
            return self._call(
                "submit_powers",
                self.fallback,
                "The fitted model's solution did not verify, so I submit my reference powers.",
            )
        return self._call(
            "simulate",
            candidate,
            "From the measured response matrix I solved for powers that put every monitor on its "
            "target while keeping the hottest heater as cool as possible. Checking them.",
        )

    def _next_probe(self, powers: np.ndarray) -> np.ndarray | None:
        """A single-heater probe that adds a new direction, or None once powers span R^n."""
        rank = np.linalg.matrix_rank(powers, tol=1e-6 * self.p_max) if len(powers) else 0
        if rank >= self.n:
            return None
        for j in range(self.n):
            probe = np.zeros(self.n)
            probe[j] = round(self.p_max / 2, 4)
            if np.linalg.matrix_rank(np.vstack([powers, probe]), tol=1e-6 * self.p_max) > rank:
                return probe
        return None  # unreachable: unit vectors span R^n

    def _solve(self, g: np.ndarray, h: np.ndarray) -> list[float] | None:
        """Minimize the hottest heater subject to every monitor inside half the tolerance."""
        from scipy.optimize import linprog

        rise = self.targets - self.ambient
        band = 0.5 * self.tol
        n = self.n
        # Variables: the n powers, then s = an upper bound on every heater's rise.
        c = np.zeros(n + 1)
        c[-1] = 1.0
        a_ub = np.vstack(
            [
                np.hstack([g, np.zeros((self.m, 1))]),
                np.hstack([-g, np.zeros((self.m, 1))]),
                np.hstack([h, -np.ones((n, 1))]),
            ]
        )
        b_ub = np.concatenate([rise + band, -(rise - band), np.zeros(n)])
        bounds = [(0.0, self.p_max)] * n + [(None, None)]
        res = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
        if res.status != 0:
            return None
        return [float(np.clip(round(float(p), 4), 0.0, self.p_max)) for p in res.x[:n]]

    def _call(self, name: str, powers: list[float], text: str) -> Message:
        call = ToolCall.make(f"thermal_{self.turn}_{name}", name, {"powers": powers})
        return assistant(text, tool_calls=[call])


def _simulations(messages: list[Message]) -> list[dict[str, Any]]:
    """The report of every successful ``simulate`` call in the conversation, oldest first."""
    return [
        message.outcome.data
        for call, message in answered_calls(messages)
        if call.name == "simulate" and message.outcome is not None and not message.outcome.is_error
    ]
