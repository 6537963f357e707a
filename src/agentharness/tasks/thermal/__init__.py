"""thermal — steady-state heat control on a 2-D plate (thermal-v2).

The agent sets the power of several heaters on a thin plate whose edges are held at
ambient temperature, so that the steady temperature at monitor points hits given
targets within a tolerance while no point exceeds a safety limit. ``simulate(powers)``
solves the steady (optionally anisotropic) heat equation by finite differences on
``scipy.sparse`` — the matrix is factorized once per plate and cached — and reports
each monitor's error, each heater's temperature, the hottest point and the safety
verdict. ``submit_powers(powers)`` is the final answer; the reward re-simulates it.

Reward (v2, see :mod:`.reward`): 0 for an unsafe or invalid answer; 0.85-1.0 when every
target is hit (efficiency pays only then); otherwise at most 0.51, by how much of the
best *uniform* setting's miss the answer closed (squared), so staying safe, all heaters
off, all at full or half power, or any other uniform setting earns nothing. Plates are
drawn so that no uniform setting comes near the targets and a blind guess almost never
hits them. Harder levels add heaters and monitors, anisotropic conductivity, a tighter
tolerance and a safety limit that rules out some target-hitting power vectors.

v1 paid efficiency and closeness to any safe answer (all heaters off earned 0.15-0.22)
and its easy plates were often solved by every heater at half power (0.5 mean reward).
"""

from agentharness.tasks.thermal.task import TASK

__all__ = ["TASK"]
