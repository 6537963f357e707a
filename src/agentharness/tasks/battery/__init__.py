"""battery — design a lithium-ion cell with PyBaMM (battery-v2).

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

Reward (v2): 0 when the design is hotter than the limit. Otherwise feasible (0.65) +
progress (0.25: 1 at the target, falling to 0 at ``progress_window`` below it, so a cool
but lean design earns nothing) + efficiency (0.1, few simulations, only when feasible).

v1 (one random design with a loose target and limit around it; partial credit per
constraint) paid a fixed design 0.55 on medium and the reference cell 0.3; it is retired.
"""

from agentharness.tasks.battery.task import TASK

__all__ = ["TASK"]
