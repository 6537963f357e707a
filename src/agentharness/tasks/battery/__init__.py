"""battery — design a lithium-ion cell with PyBaMM.

The agent chooses the positive-electrode thickness and porosity of a 21700 NMC811 /
graphite cell (and, on hard instances, a forced-cooling heat-transfer coefficient that
costs mass) so that the specific energy of a constant-current discharge reaches a target
while the peak cell temperature stays below a limit, under given ambient temperature,
C-rate and heat-transfer conditions. ``simulate_cell`` runs a real PyBaMM DFN model with
a lumped thermal model (built once per process with the design as input parameters, so
each run takes a few hundredths of a second) and reports energy, capacity, the cell-mass
breakdown, specific energy, peak temperature and each constraint's margin.
``submit_design`` is the final answer; the reward re-simulates it. Harder levels raise
the C-rate, widen the conditions, tighten the margins and add the cooling choice.
"""

from agentharness.tasks.battery.task import TASK

__all__ = ["TASK"]
