"""The ``harmony`` task spec."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.harmony.config import DIFFICULTIES, HarmonyConfig
from agentharness.tasks.harmony.expert import HarmonyExpert
from agentharness.tasks.harmony.generator import HarmonyGenerator
from agentharness.tasks.harmony.interaction import HarmonyInteraction
from agentharness.tasks.harmony.reward import reward
from agentharness.tasks.harmony.tools import HarmonyWorld

TASK = TaskSpec(
    name="harmony",
    version=5,
    modality="text",
    description=(
        "Repair a four-part (SATB) chorale: given a Roman-numeral progression and voices "
        "with injected voice-leading errors, return corrected voices. Reward: 0 with any "
        "parallel fifth/octave; 1 with no error, else at most 0.5 by the net fraction of the "
        "given errors repaired; scaled down for unnecessary changes and wide leaps."
    ),
    config_model=HarmonyConfig,
    difficulties=DIFFICULTIES,
    generator=HarmonyGenerator(),
    world=HarmonyWorld,
    interaction=HarmonyInteraction(),
    reward=reward,
    expert=HarmonyExpert,
    solved_threshold=0.9,
    tags=("text", "music", "constraint-repair"),
)
