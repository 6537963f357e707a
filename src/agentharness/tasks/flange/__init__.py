"""flange: design a bolted flange from an engineering drawing (vision).

The agent sees a rendered drawing — front view, section, notes and title block — that
alone carries the outer, bolt-circle and bore diameters, the axial load (or, on hard,
the design pressure on the bore), the allowed bore-edge displacement, the unit cost
limit and the permitted materials; the text is the same for every drawing but its
number. The agent chooses the plate thickness, the material, the bolt count and the
bolt size. ``analyze`` runs a documented annular-plate model (Roark's Table 11.2 cases
1a/1e joined by an elastic bolt rim restraint, plus transverse shear and bolt stretch)
and reports the displacement, its breakdown and the peak plate bending stress against
the material's allowable (yield / 1.5); ``cost`` prices the blank, machining, drilling
and bolts. Both are a calculator on the dimensions and load the agent read and passes
in: they never compute with the drawing's own numbers, so nothing about the drawing can
be probed out of them (v2's errors quoted the span, bolt circle, rim and load, and its
bolt stress was the load over a known area). ``submit_design`` is the answer. The
instance data is typed in :mod:`~agentharness.tasks.flange.problem` (``Public``: the
drawing number; ``Hidden``: the drawing, the exact load and the reference design).

Reward (v3): 0 unless the design meets every requirement of the drawing — the design
rules on the drawing's geometry, displacement <= limit, plate stress <= allowable, cost
<= limit, a permitted material — and then 0.8, plus 0.1 x economy (1 at the cheapest
feasible design's cost, 0 at the limit) and 0.1 x efficiency (few analyze/cost calls).
Success is meeting every requirement. (v2 paid per constraint, so the stiffest design
within the budget the text gave earned 0.44-0.74 without the drawing.) Harder
difficulties permit more materials (1, 2, 3), give the load as a pressure and narrow
the cost limit over the cheapest feasible design (12%, 8%, 4%). Every instance is built
around the cheapest design meeting the limit and the stress allowable, found by search.
"""

from agentharness.tasks.flange.task import TASK

__all__ = ["TASK"]
