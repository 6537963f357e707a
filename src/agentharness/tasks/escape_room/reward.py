"""Layer 4: full credit for escaping within par, less for extra actions, zero otherwise.

The reward never trusts the world's flags: it replays the trajectory's successful tool
calls on a fresh simulator (failed calls change nothing by construction) and finds the
call that opened the EXIT door. Actions are counted as tool calls — every call, including
failed ones, up to and including the escape — so batching calls in one turn saves nothing.

* ``outcome`` (weight 0.6): 1 if the replay escapes.
* ``efficiency`` (weight 0.4): 1 within par; falls linearly to 0 at 3 x par.
* ``progress`` (weight 0, diagnostic): fraction of exit-code digits revealed by clues read.

The total is gated on escaping, so an escape scores between 0.6 and 1.0 and anything else 0.
"""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.tasks.escape_room.problem import Hidden
from agentharness.tasks.escape_room.simulator import EscapeRoom, SimError
from agentharness.tasks.escape_room.tools import EscapeRoomWorld

OUTCOME_WEIGHT = 0.6
EFFICIENCY_WEIGHT = 0.4


def efficiency(actions: int, par: int) -> float:
    """1 up to par, then linear down to 0 at three times par."""
    if actions <= par:
        return 1.0
    return max(0.0, 1.0 - (actions - par) / (2.0 * par))


def replay(instance: Instance, trajectory: Trajectory) -> tuple[EscapeRoom, int | None]:
    """The world after replaying the trajectory, and the 1-based call that escaped (if any)."""
    sim = EscapeRoom(instance.hidden_as(Hidden).world)
    for n, call in enumerate(trajectory.tool_calls, 1):
        if call.is_error:
            continue
        try:
            sim.apply(call.name, call.arguments)
        except SimError:
            continue
        if sim.escaped:
            return sim, n
    return sim, None


def reward(instance: Instance, world: EscapeRoomWorld, trajectory: Trajectory) -> Reward:
    par = instance.hidden_as(Hidden).par
    sim, escaped_at = replay(instance, trajectory)
    n_digits = len(sim.exit_code)
    progress = sim.digits_known() / n_digits
    progress_c = RewardComponent(
        name="progress",
        value=progress,
        weight=0.0,
        detail=f"{sim.digits_known()}/{n_digits} code digits read",
    )
    if escaped_at is None:
        return Reward.from_components(
            [
                RewardComponent(
                    name="outcome", value=0.0, weight=OUTCOME_WEIGHT, detail="did not escape"
                ),
                RewardComponent(name="efficiency", value=0.0, weight=EFFICIENCY_WEIGHT),
                progress_c,
            ],
            success=False,
            explanation=(
                f"did not escape after {len(trajectory.tool_calls)} tool calls "
                f"({sim.digits_known()}/{n_digits} code digits found)"
            ),
            gate=0.0,
        )
    eff = efficiency(escaped_at, par)
    return Reward.from_components(
        [
            RewardComponent(name="outcome", value=1.0, weight=OUTCOME_WEIGHT, detail="escaped"),
            RewardComponent(
                name="efficiency",
                value=eff,
                weight=EFFICIENCY_WEIGHT,
                detail=f"{escaped_at} actions, par {par}",
            ),
            progress_c,
        ],
        success=True,
        explanation=f"escaped in {escaped_at} actions (par {par})",
    )
