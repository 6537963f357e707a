"""Layer 4: the chips won beyond what card-blind play makes on the same deals.

The reward never trusts the world's counters: it replays every successful ``act`` call of
the trajectory on a fresh pokerkit session built from the hidden card stacks (the bot is
seeded, so the replay is exact) and reads the agent's result from it.

Poker results are mostly luck, so the result is compared duplicate-style, on exactly the
same deals against exactly the same bot:

* ``A`` — the agent's net chips with the showdowns' luck taken out
  (:attr:`Session.adjusted_net`): a hand that ends in a fold counts as it fell; a hand
  that reaches a showdown counts by the agent's average result against every hand the
  bot could hold, each weighted by the chance that the bot's known rule plays it the
  way the bot played (an exact posterior, so the mean is the chips' mean for any
  player), over the rest of the board when the betting ended before the river. In an
  unfinished session the current hand counts as folded.
* ``L`` — the best of the lazy baselines that never look at their cards (check/fold,
  check/call, all-in every time, call-or-all-in), played on the same deals by the
  generator (``Hidden.lazy_best``). Passive or blind play earns nothing.
* ``R`` — what the reference policy makes on the same deals (``Hidden.reference_net``).

* ``edge`` (the score): ``clip((A - L) / max(R - L, G), 0, 1)`` with ``G`` =
  ``min_edge_bb`` big blinds: 0 for doing no better than the best card-blind play, 1 for
  beating it by the reference's margin (and by at least ``G``), in proportion between.
* ``completion`` (gate): 1 when all hands were played, else the share of hands finished.

Acting legally earns nothing by itself. ``success`` means a finished session that beats
the best card-blind play by at least three quarters of that target.
"""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.tasks.holdem.problem import Hidden, Public
from agentharness.tasks.holdem.simulator import IllegalAction, Session
from agentharness.tasks.holdem.tools import HoldemWorld, act_arguments

SUCCESS_SHARE = 0.75


def edge_score(agent: float, lazy_best: float, reference: float, min_edge: float) -> float:
    """The share of the target margin over the best lazy baseline, clipped to [0, 1]."""
    target = max(reference - lazy_best, min_edge)
    return min(1.0, max(0.0, (agent - lazy_best) / target))


def replay(instance: Instance, trajectory: Trajectory) -> tuple[Session, int, int]:
    """The session after the trajectory's legal actions, and (legal, illegal) act counts."""
    session = Session(instance.hidden_as(Hidden).session)
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


def reward(instance: Instance, world: HoldemWorld, trajectory: Trajectory) -> Reward:
    session, _, illegal = replay(instance, trajectory)
    spec = session.spec
    bb = spec.big_blind
    hidden = instance.hidden_as(Hidden)
    lazy_best = hidden.lazy_best
    reference = hidden.reference_net
    min_edge = instance.public_as(Public).min_edge_bb * bb
    target = max(reference - lazy_best, min_edge)
    agent = session.adjusted_net
    score = edge_score(agent, lazy_best, reference, min_edge)
    done = session.hands_finished
    completion = 1.0 if session.over else done / spec.n_hands
    status = (
        f"session over after {done} hands"
        if session.over
        else f"session unfinished: {done} of {spec.n_hands} hands played"
    )
    best_name = hidden.best_lazy_name
    return Reward.from_components(
        [
            RewardComponent(
                name="edge",
                value=score,
                weight=1.0,
                detail=(
                    f"net {agent / bb:+.1f} big blinds with the showdowns' luck taken out "
                    f"({session.net / bb:+.1f} as dealt); best card-blind play ({best_name}) "
                    f"{lazy_best / bb:+.1f}; target margin {target / bb:.1f} "
                    f"(reference {reference / bb:+.1f})"
                ),
            ),
            RewardComponent(name="completion", value=completion, weight=0.0, detail=status),
        ],
        success=session.over and agent - lazy_best >= SUCCESS_SHARE * target,
        explanation=(
            f"{status}; {(agent - lazy_best) / bb:+.1f} big blinds over the best card-blind "
            f"play, {score:.0%} of the target margin; {illegal} illegal act calls"
        ),
        gate=completion,
    )
