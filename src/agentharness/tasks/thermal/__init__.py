"""thermal — steady-state heat control on a 2-D plate.

The agent sets the power of several heaters on a thin plate whose edges are held at
ambient temperature, so that the steady temperature at monitor points hits given
targets within a tolerance while no point exceeds a safety limit. ``simulate(powers)``
solves the steady (optionally anisotropic) heat equation by finite differences on
``scipy.sparse`` — the matrix is factorized once per plate and cached — and reports
each monitor's error, each heater's temperature, the hottest point and the safety
verdict. ``submit_powers(powers)`` is the final answer; the reward re-simulates it.
Harder levels add heaters and monitors, anisotropic conductivity, a tighter tolerance
and a safety limit that rules out some target-hitting power vectors.
"""

from agentharness.tasks.thermal.task import TASK

__all__ = ["TASK"]
