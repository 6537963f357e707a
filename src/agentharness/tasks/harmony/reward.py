"""Layer 4: the submitted voices re-checked; parallels gate, penalties for the rest."""

from __future__ import annotations

from typing import Any

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import ToolError, World
from agentharness.tasks.harmony import simulator
from agentharness.tasks.harmony.simulator import ChordInfo

ERROR_PENALTY = 0.2  # per remaining non-parallel error
WARNING_PENALTY = 0.25  # per wide leap
CHANGE_PENALTY = 0.15  # per changed note beyond the number altered

WEIGHTS = {"correctness": 0.6, "smoothness": 0.1, "minimal_changes": 0.3}


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Re-check the submitted voices from scratch.

    Zero if nothing was submitted or any parallel fifth/octave remains. Otherwise the
    weighted mean of correctness (1 - 0.2 per remaining error), smoothness (1 - 0.25
    per wide leap) and minimal changes (1 - 0.15 per changed note beyond the number of
    altered notes). Success means no errors at all.
    """
    from agentharness.tasks.harmony.tools import parse_voices

    answer: dict[str, Any] | None = world.final_answer
    if answer is None:
        return _zero(f"no voices submitted (episode ended: {trajectory.end_reason})")
    voices = answer.get("voices")
    if not isinstance(voices, dict):
        return _zero("the submission has no voices")
    pub = instance.public
    chords = [ChordInfo.from_public(c) for c in pub["chords"]]
    try:
        real, names = parse_voices(voices, int(pub["n_chords"]))
    except ToolError as e:
        return _zero(f"the submitted voices do not parse: {e}")
    report = simulator.check(real, chords, names)
    given = simulator.to_realization(instance.hidden["given_midi"])
    changed = len(simulator.changed_notes(given, real))
    extra = max(0, changed - int(pub["n_altered"]))
    parallels = len(report.parallels)
    others = len(report.errors) - parallels
    warnings = len(report.warnings)
    components = [
        RewardComponent(
            name="no_parallels",
            value=float(parallels == 0),
            weight=0.0,
            detail=f"{parallels} parallel fifth(s)/octave(s) (any one scores 0)",
        ),
        RewardComponent(
            name="correctness",
            value=1.0 - ERROR_PENALTY * others,
            weight=WEIGHTS["correctness"],
            detail=f"{others} other error(s)",
        ),
        RewardComponent(
            name="smoothness",
            value=1.0 - WARNING_PENALTY * warnings,
            weight=WEIGHTS["smoothness"],
            detail=f"{warnings} wide leap(s)",
        ),
        RewardComponent(
            name="minimal_changes",
            value=1.0 - CHANGE_PENALTY * extra,
            weight=WEIGHTS["minimal_changes"],
            detail=f"{changed} note(s) changed, {extra} beyond the {pub['n_altered']} altered",
        ),
    ]
    success = parallels == 0 and others == 0
    explanation = (
        f"{parallels} parallel(s), {others} other error(s), {warnings} warning(s), "
        f"{changed} note(s) changed ({extra} unnecessary)"
    )
    return Reward.from_components(
        components,
        success=success,
        explanation=explanation,
        gate=1.0 if parallels == 0 else 0.0,
    )


def _zero(why: str) -> Reward:
    return Reward.from_components(
        [RewardComponent(name=n, value=0.0, weight=w, detail=why) for n, w in WEIGHTS.items()],
        success=False,
        explanation=why,
        gate=0.0,
    )
