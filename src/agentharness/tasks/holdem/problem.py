"""The instance data of a hold'em session, typed: ``Public`` (the prompt) and ``Hidden``.

``Hidden.session`` is the :class:`~agentharness.tasks.holdem.simulator.SessionSpec` that
fixes every deal and the bot's seed; ``Hidden.solution`` is the reference's play-through
and the nets are what the reward measures the agent against. The generator builds both
models and stores their ``model_dump(mode="json")``; every layer reads instances back
with ``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentharness.tasks.holdem.config import BotStyle
from agentharness.tasks.holdem.simulator import SessionSpec


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Public(_Frozen):
    """What the prompt states: the session's shape, the bot's style and the limits."""

    n_hands: int
    bot_style: BotStyle
    stack_bb: int
    big_blind: int
    small_blind: int
    image_width: int
    min_edge_bb: float  # the smallest target margin over card-blind play, in big blinds
    max_tool_calls: int


class Hidden(_Frozen):
    """The deals, the reference's actions and the nets the reward compares against."""

    session: SessionSpec
    solution: tuple[tuple[str, int | None], ...]  # the reference's act calls, in order
    reference_net: float  # the reference's net with the showdowns' luck taken out
    reference_net_dealt: int  # the same, as the cards fell
    lazy_nets: dict[str, float]  # each card-blind baseline's adjusted net
    lazy_best: float  # the best of them: what the agent must beat

    @property
    def best_lazy_name(self) -> str:
        return max(self.lazy_nets, key=self.lazy_nets.__getitem__)
