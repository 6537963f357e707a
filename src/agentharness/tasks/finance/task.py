"""The finance task's registration."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.finance.config import DIFFICULTIES, FinanceConfig
from agentharness.tasks.finance.expert import FinanceExpert
from agentharness.tasks.finance.generator import FinanceGenerator
from agentharness.tasks.finance.interaction import FinanceInteraction
from agentharness.tasks.finance.reward import reward
from agentharness.tasks.finance.tools import FinanceWorld

TASK = TaskSpec(
    name="finance",
    version=3,
    modality="text",
    description=(
        "Forecast next year's income statement, balance sheet and cash flow so that the accounting "
        "identities and plausibility bounds hold and chosen ratios match or beat their best "
        "historical value. A linear-programming tool solves the constraints the agent writes."
    ),
    config_model=FinanceConfig,
    difficulties=DIFFICULTIES,
    generator=FinanceGenerator(),
    world=FinanceWorld,
    interaction=FinanceInteraction(),
    reward=reward,
    expert=FinanceExpert,
    solved_threshold=0.9,
    tags=("feedback-rich", "accounting", "linear-programming"),
)
