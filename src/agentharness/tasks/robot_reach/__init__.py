"""robot_reach: move an articulated arm's end effector onto a target (robot_reach-v7).

A planar (2-D, circular obstacles) or spatial (3-D, alternating yaw/pitch joints,
spherical obstacles) serial arm of 2-7 revolute links with joint limits, resting at a
given collision-free start configuration far from the target. The agent probes
configurations with ``forward_kinematics`` (joint positions, end-effector pose, offset and
distance to the target) and ``check_collision`` (capsule-vs-circle/sphere contacts,
optional self-collision, per-link clearances), then answers with ``submit_angles``.

Computation tools (v3, v4). Inverse kinematics among obstacles is iterative numerics a
policy cannot do in its head, so the task gives it the pieces to do it in the open (and
its expert uses them, so every angle in its trajectories was visible first; see
:mod:`agentharness.imitability`):

* ``jacobian(joint_angles, margin)``: at one configuration, the offset to the target,
  the end effector's Jacobian (metres per degree of each joint) and, for every link
  closer than ``margin`` to an obstacle or another link, its clearance, shortfall and
  clearance gradient. A first-order model of the arm, nothing more: it does not say
  where to go.
* ``solve_linear(a, b)`` and ``calculate(expression)`` (the safe calculator of
  :class:`~agentharness.core.calculator.CalculatorWorld`): a damped least-squares
  (Levenberg-Marquardt) step is ``solve_linear`` on the Jacobian rows, the clearance
  rows and a damping diagonal; the next angles are the current ones plus the step.
* ``dls_step(joint_angles, damping)`` (v4): that step in one call, reporting the new
  angles (within the limits) and the cost before and after. v3's expert built each
  system from a report and added the solved step to the angles in its text; SmolLM2-135M
  trained on those trajectories learned the format but not the copying and the sum
  (experiments/RESULTS.md). With ``dls_step`` every angle an agent sends is one it was
  shown.

There is deliberately no ``inverse_kinematics(target)``: the agent still chooses where
to start, decides whether a step helped (and the damping), and tells when it is done.
A start far from any collision-free reaching pose converges to a wrong local minimum, so
choosing the start (which elbow, which side of an obstacle) stays the hard part: the
expert's search from the rest pose alone solves 2, 5 and 3 of 20 instances at easy,
medium and hard, from the straight pose 12, 10 and 8, from the poses ``start_poses``
lists (v6) all at easy and medium and 27 of 30 at hard. Every call, computations included,
counts towards the efficiency credit.

Reward (see :mod:`.reward`): 0 for an answer that collides or is invalid; 0.9-1.0
within the tolerance (efficiency pays only then); otherwise partial credit only inside a
shaped radius around the target (a quarter of the arm's reach, half the start's distance
and, since v6, half the nearest collision-free simple pose's), at most 0.45 and falling
quadratically to 0 at that radius, so a collision-free answer anywhere else, the start,
straight or limit pose or a pose ``start_poses`` lists earn nothing. Harder levels add
links, obstacles closer to the only feasible pose (12 on hard, 4 cm off it), narrow
passages and a third dimension.

v7 (instances, tools and rewards those of v6) replies in words a small model copies.
SmolLM2-135M after SFT on v6's expert read a ``dls_step`` reply (ten JSON keys on one
line) and narrated "within tolerance" after ``"within_tolerance": false`` in 18 of its 19
misses on 40 held-out medium instances (and "collision-free" after ``"collision_free":
false``): the expert says both flags aloud at every step, so the model had to translate a
buried boolean into words. ``dls_step`` now opens with its verdict in the expert's words,
"Improved, 0.1769 m from the target, not within tolerance, collision-free." (or "Not
improved", "within tolerance", "colliding"), then ``joint_angles: [...]`` to copy, then
the costs, the largest step, whether a joint was held at a limit and the minimum
clearance on one line; the expert's narration of a kept step is that first line word for
word plus its decision, of a dropped one its first words. ``start_poses`` lists one
numbered line per pose and ``submit_angles`` says the same flag words. The full reports
stay in the results' data, which the expert reads; its calls are v6's, call for call
(seeds 0-19 at easy and medium, 0-9 at hard: all solved, as with v6).
Angle lists, in replies and narration, are printed as the calls carry them (v6's
narration cut them to six digits). With SmolLM2's tokenizer (medians over 20 expert
episodes, ``<tool_response>`` tags included) a ``dls_step`` reply is 104 tokens instead of
142 at easy and 122 instead of 159 at medium, ``start_poses`` 141 instead of 165 and 177
instead of 199, ``submit_angles`` 34 instead of 37; an episode's tool replies 384 instead
of 487 at easy and 456 instead of 558 at medium, the expert's turns 307 instead of 303
and 366 instead of 362 (the start's angles now keep their ".0").

v6 (instances those of v2-v5) adds ``start_poses()``: collision-free simple poses (each
joint at 0, half its limit or its limit) to start from, ranked by how close four damped
least-squares steps from each get without colliding (the 120 nearest the target are looked
ahead from), with that distance reported. Its expert starts from the first pose listed
and moves on to the next after four steps that do not reach the target, so its choice of
start is read off a tool's reply instead of made privately from the hidden solution, and
each step it takes says both flags aloud. At easy and medium it solves 20 of 20 instances
in 4.0 and 4.3 turns on average; at hard 27 of 30 (0.92; v5's privileged expert 1.00).
On the three it misses, no simple pose leads within the 2 cm tolerance even in twelve
damped steps (seed 17 stalls 1.1 m away behind obstacles, 21 and 27 stop 3-4 cm short),
so a better local search, not a better ranking, is what hard still needs. The
partial-credit radius is now also at most half the
distance of the nearest collision-free simple pose, so submitting a listed pose unsolved
earns nothing (with v5's radius it earned 0.13 on average at easy).

v5 (instances and rewards those of v2-v4) spends a third fewer prompt tokens: the tools
are described once, tersely, in their schemas (the prompt no longer lists them again),
and ``dls_step`` no longer echoes its arguments or the step itself. Its expert submits as
soon as a kept step reports ``within_tolerance`` and ``collision_free`` (v4 waited for half
the tolerance, a threshold a policy had to compute) and narrates in fewer words. With the
text tool format and SmolLM2's chat template, an easy episode's prompt is ~1,290 tokens
instead of ~1,915, its tool replies ~320 instead of ~440 and the expert's turns ~280
instead of ~370 (bench/RESULTS.md).

v4 added ``dls_step`` (instances and rewards are those of v2 and v3; the prompt lists
the new tool) and its expert iterates with it instead of ``solve_linear`` plus mental
arithmetic. v3 added ``jacobian``, ``solve_linear`` and ``calculate``. v2's expert solved
inverse kinematics privately (with the hidden solution as fallback) and narrated the
result; v3's and v4's experts iterate visible damped least-squares steps from a simple
start pose (see :mod:`.expert`). Choosing that start is the one place they use privileged
knowledge (the expert rehearses the search privately from a few simple poses near the
hidden solution and plays the quickest); the numbers it sends are all visible.

v1 paid 0.15 for any collision-free answer anywhere and partial reach credit far from
the target (the straight pose earned 0.11-0.15, the best constant answer 0.19).
"""

from agentharness.tasks.robot_reach.task import TASK

__all__ = ["TASK"]
