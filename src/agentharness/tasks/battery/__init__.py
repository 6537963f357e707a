"""battery — design a lithium-ion cell with PyBaMM (battery-v3).

The agent chooses the positive-electrode thickness and porosity of a 21700 NMC811 /
graphite cell (and, on hard instances, a forced-cooling heat-transfer coefficient that
costs mass) so that the specific energy of a constant-current discharge reaches a target
while the peak cell temperature stays below a limit, under given ambient temperature,
C-rate and heat-transfer conditions. ``simulate_cell`` runs a real PyBaMM DFN model with
a lumped thermal model (built once per process with the design as input parameters, so
each run takes a few hundredths of a second) and reports energy, capacity, the cell-mass
breakdown, specific energy, peak temperature and each constraint's margin.
``submit_design`` is the final answer; the reward re-simulates it.

Instances (v2): each draw's conditions and thermal budget come with a hidden design that
the generator found, with the simulator, to store about the most energy per kilogram at
that peak temperature (best porosity, and best cooling where the agent sizes it). The
target is that design's specific energy and the limit sits a small fraction of its
temperature rise above its peak, so the feasible designs are a thin sliver just under the
limit that moves with every draw: no fixed design, reference cell or schema-boundary
design solves more than a few percent of instances. Harder levels narrow the band
(1.5 %, 1 %, 0.7 % of the rise), raise the C-rates and add the cooling choice.

Computation tools (v3). Finding the sliver is a search a policy cannot do in its head
(secant steps on thickness, interpolation to the limit, a parabola over porosity), so the
task gives it the tools to compute in the open, and its expert uses them, so every number
in its trajectories was visible first (see :mod:`agentharness.imitability`):

* ``calculate(expression)`` and ``solve_linear(a, b)``, the safe calculator of
  :class:`~agentharness.core.calculator.CalculatorWorld` (parsed arithmetic, never
  ``eval``): e.g. the thickness where two simulated designs' peak temperatures say the
  limit is reached, or the parabola ``a p^2 + b p + c`` through three (porosity, specific
  energy) points, whose top is ``-b / (2a)``.

There is deliberately no tool that knows the cell: these compute only with the numbers the
agent passes in, so it still has to plan its probes, read every result off (budgeted)
simulations and check the design it ends with. Only simulations count against the budget
and the efficiency credit. The expert (:mod:`.expert`) starts from the reference cell of
the prompt, finds the thickness at the temperature limit for a porosity by secant steps,
compares cooling systems (hard) and porosities there, fits the parabola and lands on the
thickest design under the limit at its top; it reads nothing hidden. The turn budget is
60 (v2: 40) so that a search with a computation before most simulations fits.

Reward (unchanged since v2): 0 when the design is hotter than the limit. Otherwise feasible (0.65) +
progress (0.25: 1 at the target, falling to 0 at ``progress_window`` below it, so a cool
but lean design earns nothing) + efficiency (0.1, few simulations, only when feasible).

v3 added the computation tools, the larger turn budget and the searching expert;
instances, simulations and rewards are those of v2. v2's expert bisected the thickness at
the hidden design's porosity and cooling (and submitted the hidden design as a fallback).

v1 (one random design with a loose target and limit around it; partial credit per
constraint) paid a fixed design 0.55 on medium and the reference cell 0.3; it is retired.
"""

from agentharness.tasks.battery.task import TASK

__all__ = ["TASK"]
