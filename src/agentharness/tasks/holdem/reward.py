"""Layer 4: a sigmoid of the net chips, re-computed by replaying the session.

The reward never trusts the world's counters: it replays every successful ``act`` call of
the trajectory on a fresh pokerkit session built from the hidden card stacks (the bot is
seeded, so the replay is exact) and reads the agent's chips from it.

* ``chips`` (weight 0.85): ``sigmoid(k * net / starting stack)``; 0.5 for breaking even.
  ``net`` is all-in adjusted: when a hand is all-in before the river, its result counts as
  the agent's equity share of the pot at that moment instead of the runout's luck (the
  usual way to score poker with less variance; the expectation is the same). In an
  unfinished session the chips already in the current pot count as lost.
* ``legality`` (weight 0.15): the share of ``act`` calls that were legal actions.
* ``completion`` (gate): 1 when the session ended (all hands played or a player busted),
  else the share of hands finished; the weighted mean above is multiplied by it, so a
  player who stops early scores little.

``success`` means a finished session with more chips than at the start.
"""

from __future__ import annotations

import math

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import World
from agentharness.tasks.holdem.simulator import IllegalAction, Session, SessionSpec
from agentharness.tasks.holdem.tools import act_arguments

CHIPS_WEIGHT = 0.85
LEGALITY_WEIGHT = 0.15


def chip_score(net: float, stack: int, k: float) -> float:
    """The logistic score of ``net`` chips for a starting stack ``stack``."""
    return 1.0 / (1.0 + math.exp(-k * net / stack))


def replay(instance: Instance, trajectory: Trajectory) -> tuple[Session, int, int]:
    """The session after the trajectory's legal actions, and (legal, illegal) act counts."""
    session = Session(SessionSpec.from_dict(instance.hidden["session"]))
    legal = illegal = 0
    for call in trajectory.tool_calls:
        if call.name != "act":
            continue
        if call.is_error:
            illegal += 1
            continue
        args = act_arguments(call.arguments)
        if args is None or session.over:
            illegal += 1
            continue
        try:
            session.act(*args)
        except IllegalAction:
            illegal += 1
            continue
        legal += 1
    return session, legal, illegal


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    session, legal, illegal = replay(instance, trajectory)
    spec = session.spec
    k = float(instance.public["chip_scale"])
    net = session.expected_net
    real = session.net
    chips = chip_score(net, spec.stack, k)
    attempts = legal + illegal
    legality = legal / attempts if attempts else 0.0
    done = session.hands_finished
    completion = 1.0 if session.over else done / spec.n_hands
    bb = spec.big_blind
    status = (
        f"session over after {done} hands ({session.end_note})"
        if session.over
        else f"session unfinished: {done} of {spec.n_hands} hands played"
    )
    return Reward.from_components(
        [
            RewardComponent(
                name="chips",
                value=chips,
                weight=CHIPS_WEIGHT,
                detail=(
                    f"all-in adjusted net {net:+.1f} chips ({net / bb:+.1f} big blinds; "
                    f"{real:+d} chips as dealt) on a stack of {spec.stack}"
                ),
            ),
            RewardComponent(
                name="legality",
                value=legality,
                weight=LEGALITY_WEIGHT,
                detail=f"{legal} legal of {attempts} act calls",
            ),
            RewardComponent(name="completion", value=completion, weight=0.0, detail=status),
        ],
        success=session.over and net > 0,
        explanation=f"{status}; net {net:+.1f} chips all-in adjusted; {illegal} illegal act calls",
        gate=completion,
    )
