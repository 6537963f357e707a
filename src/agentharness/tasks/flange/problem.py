"""The instance data of a flange problem, typed: the drawing, the truth and the prompt's part.

Every instance-specific number is on the :class:`Drawing`, kept in :class:`Hidden` and
shown to the agent only as the rendered image; :class:`Public` holds just the drawing
number. The generator builds both through these models (``model_dump(mode="json")``,
fields in the order they are stored), and every layer reads them back with
``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentharness.tasks.flange.simulator import Geometry


class Drawing(BaseModel):
    """What the engineering drawing shows (the only place the agent sees these numbers)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    number: str
    outer_d: float
    bore_d: float
    bcd: float
    load_kn: float
    pressure_mpa: float
    load_as_pressure: bool
    limit_mm: float
    budget_usd: float
    permitted: tuple[str, ...]


class Solution(BaseModel):
    """A design in the tools' argument names (``bolt_diameter`` is the bolt size number)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    thickness: float
    material: str
    n_bolts: int
    bolt_diameter: int


class Hidden(BaseModel):
    """The drawing, the exact load and the cheapest feasible design it was built around."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    drawing: Drawing
    load_n: float
    limit_mm: float
    budget_usd: float
    permitted: tuple[str, ...]
    solution: Solution
    solution_displacement_mm: float
    solution_stress_mpa: float
    solution_cost_usd: float

    def geometry(self) -> Geometry:
        """The drawing's dimensions with the exact load (what the reward verifies on)."""
        d = self.drawing
        return Geometry(outer_d=d.outer_d, bore_d=d.bore_d, bcd=d.bcd, load_n=self.load_n)


class Public(BaseModel):
    """What the prompt text says about the instance: only the drawing number."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    drawing_number: str
