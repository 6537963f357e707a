"""thermal — steady-state heat control on a 2-D plate (thermal-v6).

The agent sets the power of several heaters on a thin plate whose edges are held at
ambient temperature, so that the steady temperature at monitor points hits given
targets within a tolerance while no point exceeds a safety limit. ``simulate(powers)``
solves the steady (optionally anisotropic) heat equation by finite differences on
``scipy.sparse`` — the matrix is factorized once per plate and cached — and reports
how many targets are hit and the safety verdict, then a line per monitor (rise above
ambient, error) and per heater (rise). ``submit_powers(powers)``
is the final answer; the reward re-simulates it. ``probe_heaters()`` (v5) runs each heater
alone at 1 W, one simulation per heater, and prints every monitor's and heater's rise per
watt of each heater: the response the powers are solved from.

Computation tools (v3). Finding the powers is linear algebra a policy cannot do in its
head, so the task gives it the tools to do it in the open (and its expert uses them, so
every number in its trajectories was visible first; see :mod:`agentharness.imitability`):

* ``calculate(expression)`` and ``solve_linear(a, b)`` (the safe calculator of
  :class:`~agentharness.core.calculator.CalculatorWorld`): with as many monitors as
  heaters or more, the powers solve ``G p = target rise``, where column ``j`` of ``G`` is
  read off a simulation of heater ``j`` alone at 1 W (superposition).
* ``minimize_max(c, a, b, tolerance, upper)``: a small linear program. With more heaters
  than monitors (hard) many power vectors hit the targets and only some respect the
  safety limit; the safe choice keeps the hottest heater as cool as possible, which is
  an optimisation, not a solve.

There is deliberately no tool that returns the powers for the targets: the computation
tools know nothing about the plate and ``probe_heaters`` only measures it, so the agent
still has to measure the response with (budgeted) simulations, set up the system from what
it read (which rows, which targets, which solver), and check the result.
Only simulations count against the budget and the efficiency credit.

Reward (unchanged since v2, see :mod:`.reward`): 0 for an unsafe or invalid answer; 0.85-1.0 when every
target is hit (efficiency pays only then); otherwise at most 0.51, by how much of the
best *uniform* setting's miss the answer closed (squared), so staying safe, all heaters
off, all at full or half power, or any other uniform setting earns nothing. Plates are
drawn so that no uniform setting comes near the targets and a blind guess almost never
hits them. Harder levels add heaters and monitors, anisotropic conductivity, a tighter
tolerance and a safety limit that rules out some target-hitting power vectors.

v6 says each thing once and prints no digit the tolerance does not need (SmolLM2 tokens of
an expert episode as the local agent renders it, medians over seeds 0-19, v5 -> v6). The
system prompt's "Tools:" section repeated the tool signatures the agent reads anyway (and
left out ``probe_heaters``): the signatures now say what it said, concisely, and the prompt
keeps one sentence (the computation tools know nothing about the plate and cost no
simulation) and the Rules. The prompt goes from 1,518 tokens to 1,051 at medium (system
405 -> 205, signatures 656 -> 480, user prompt 442 -> 351: positions as ``(x, y)``, no second
statement of the goal or of the budget's accounting) and from 1,442 to 994 at easy. Replies
drop what they repeated (a simulation's temperatures, which are ambient + rise; its powers,
the call's own arguments; "within ±0.5 K", which the prompt states) and print rises and
rises per watt to 1 mK, errors to 0.01 K and computed powers to 4 significant digits, the
values in ``data`` rounded alike. At medium a simulation's reply goes from about 274 tokens
to 157, ``probe_heaters``'s from 222 to 198, ``solve_linear``'s from 50 to 39 and the
answer's from 66 to 32. A whole episode: 2,127 tokens to 1,547 at easy, 2,523 to 1,845 at
medium (tool replies 661 -> 474; the expert's turns, which copy the shorter numbers, 344 ->
320). Plates, budgets, rewards and the expert's four turns are v5's.

v5 adds ``probe_heaters``: the unit probes the expert made one ``simulate`` call each for,
in one call and a compact matrix (at easy, 2 heaters, the probes' replies go from about 380
tokens to 70), so the expert takes four turns at every difficulty (probe, solve, check,
submit) instead of one more per heater, and says less between its calls. Plates, budgets
and rewards are v4's.

v4 prints a simulation as a verdict line and a line per point instead of v3's JSON (about
170 tokens at easy and 265 at medium instead of 450 and 670: on a small model the replies
were most of an episode's tokens and most of a GRPO step's time), and the prompt gives each
monitor's target rise above ambient (``b`` of the solve) once instead of every report. The
full report stays in each result's ``data``. Plates and rewards are v3's.

v3 added ``rise_k``/``target_rise_k`` to the simulation report and the computation
tools; plates and rewards are those of v2. v2's expert computed its powers privately (a
least-squares fit and a linear program, with the hidden solution as fallback); v3's
expert probes each heater at 1 W and computes with the tools above.

v1 paid efficiency and closeness to any safe answer (all heaters off earned 0.15-0.22)
and its easy plates were often solved by every heater at half power (0.5 mean reward).
"""

from agentharness.tasks.thermal.task import TASK

__all__ = ["TASK"]
