"""flange: design a bolted flange from an engineering drawing (vision).

The agent sees a rendered drawing — front view, section, notes and title block — that
alone carries the outer, bolt-circle and bore diameters, the axial load (or, on hard,
the design pressure on the bore), the allowed bore-edge displacement and the permitted
materials. It chooses the plate thickness, the material, the bolt count and the bolt
size. ``analyze`` runs a documented annular-plate model (Roark's Table 11.2 cases 1a/1e
joined by an elastic bolt rim restraint, plus transverse shear and bolt stretch) and
reports the displacement and its breakdown but not the limit, which only the drawing
gives; ``cost`` prices the blank, machining,
drilling and bolts against the budget; ``submit_design`` is the answer. Reward: each
constraint met (partial credit by how far it is missed), a permitted material, full
success, and an efficiency bonus for few checks. Harder difficulties bring larger
parts, more permitted materials, tighter budgets and a pressure instead of a force.
Every instance is built around the cheapest feasible design, found by search.
"""

from agentharness.tasks.flange.task import TASK

__all__ = ["TASK"]
