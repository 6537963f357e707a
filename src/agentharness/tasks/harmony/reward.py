"""Layer 4: the submitted voices re-checked against the given chorale.

The reward pays for repairing, not for avoiding mistakes: it is measured against the
errors of the given (faulty) chorale, so echoing the given voices, holding every voice
still, or freezing a voice at each reported parallel (which trades the parallel for a
non-chord tone) earns nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import ToolError
from agentharness.tasks.harmony import simulator
from agentharness.tasks.harmony.problem import Hidden, Public
from agentharness.tasks.harmony.simulator import ChordInfo, Issue, Voicing
from agentharness.tasks.harmony.tools import HarmonyWorld, parse_voices

PARTIAL_WEIGHT = 0.5  # the most an answer with errors left can earn
NEW_ERROR_PENALTY = 1.0  # each error the answer creates cancels one it repaired
CHANGE_PENALTY = 0.2  # per changed note beyond the number altered (factor)
WARNING_PENALTY = 0.05  # per wide leap (factor)

ErrorKey = tuple[str, int, tuple[str, ...]]


def error_keys(issues: list[Issue]) -> Counter[ErrorKey]:
    """The errors of a report as a multiset of (kind, chord, voices)."""
    return Counter((x.kind, x.chord, x.voices) for x in issues if x.is_error)


def repair_progress(
    given: list[Voicing], answer: list[Voicing], chords: list[ChordInfo]
) -> tuple[float, int, int, int]:
    """(net fraction repaired, repaired, new, errors of the given chorale).

    An error of the given chorale is repaired when the answer no longer has an error of
    the same kind at the same chord and voices; every error the answer has that the
    given chorale had not is new and cancels one repaired error.
    """
    plain = [[str(x) for x in v] for v in given]
    before = error_keys(simulator.check(given, chords, plain).errors)
    plain = [[str(x) for x in v] for v in answer]
    after = error_keys(simulator.check(answer, chords, plain).errors)
    repaired = sum((before - after).values())
    new = sum((after - before).values())
    total = sum(before.values())
    if total == 0:
        return 1.0, 0, new, 0
    net = max(0.0, repaired - NEW_ERROR_PENALTY * new) / total
    return net, repaired, new, total


def reward(instance: Instance, world: HarmonyWorld, trajectory: Trajectory) -> Reward:
    """Re-check the submitted voices (``world.submitted``); never trusts the world's counts.

    ``total = repair x no_parallels x minimal_changes x smoothness``:

    * repair: 1 when no error remains; otherwise ``0.5 x`` the net fraction of the
      given chorale's errors repaired (repaired minus newly created, over the given
      errors, at least 0);
    * no_parallels: 0 with any parallel fifth/octave left (a gate);
    * minimal_changes: ``1 - 0.2`` per changed note beyond the number altered;
    * smoothness: ``1 - 0.05`` per wide leap.

    Success means no error and no change beyond the number of altered notes.
    """
    voices: dict[str, Any] | None = world.submitted
    if world.final_answer is None or voices is None:
        return _zero(f"no voices submitted (episode ended: {trajectory.end_reason})")
    pub = instance.public_as(Public)
    chords = pub.chord_infos()
    try:
        real, names = parse_voices(voices, pub.n_chords)
    except ToolError as e:
        return _zero(f"the submitted voices do not parse: {e}")
    report = simulator.check(real, chords, names)
    given = simulator.to_realization(instance.hidden_as(Hidden).given_midi)
    n_altered = pub.n_altered
    changed = len(simulator.changed_notes(given, real))
    extra = max(0, changed - n_altered)
    parallels = len(report.parallels)
    errors = len(report.errors)
    warnings = len(report.warnings)
    progress, repaired, new, before = repair_progress(given, real, chords)
    solved = errors == 0
    repair = 1.0 if solved else PARTIAL_WEIGHT * progress
    minimal = max(0.0, 1.0 - CHANGE_PENALTY * extra)
    smooth = max(0.0, 1.0 - WARNING_PENALTY * warnings)
    components = [
        RewardComponent(
            name="repair",
            value=repair,
            weight=1.0,
            detail=(
                "no error left"
                if solved
                else f"{errors} error(s) left: {repaired} of the given {before} repaired, "
                f"{new} new; partial credit {PARTIAL_WEIGHT:g} x {progress:.2f}"
            ),
        ),
        RewardComponent(
            name="no_parallels",
            value=float(parallels == 0),
            weight=0.0,
            detail=f"{parallels} parallel fifth(s)/octave(s) (any one scores 0)",
        ),
        RewardComponent(
            name="minimal_changes",
            value=minimal,
            weight=0.0,
            detail=f"{changed} note(s) changed, {extra} beyond the {n_altered} altered",
        ),
        RewardComponent(
            name="smoothness",
            value=smooth,
            weight=0.0,
            detail=f"{warnings} wide leap(s)",
        ),
    ]
    explanation = (
        f"{parallels} parallel(s), {errors} error(s) left ({repaired} of {before} given "
        f"error(s) repaired, {new} new), {warnings} warning(s), {changed} note(s) changed "
        f"({extra} unnecessary)"
    )
    return Reward.from_components(
        components,
        success=solved and extra == 0,
        explanation=explanation,
        gate=(1.0 if parallels == 0 else 0.0) * minimal * smooth,
    )


def _zero(why: str) -> Reward:
    return Reward.from_components(
        [RewardComponent(name="repair", value=0.0, weight=1.0, detail=why)],
        success=False,
        explanation=why,
        gate=0.0,
    )
