"""The frozen description of one generated problem."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


class Instance(BaseModel):
    """Everything needed to replay one problem: what is logged, exported and mutated.

    ``public`` is what the agent may see; ``hidden`` is the ground truth the reward and
    the expert need (including the feasible solution the generator built the instance
    around). Both must be JSON-serializable: behaviour is never stored here.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field(description="Versioned task id, e.g. 'escape_room-v1'.")
    seed: int
    difficulty: str
    config: dict[str, Any] = Field(description="The full generator config used (knobs).")
    public: dict[str, Any]
    hidden: dict[str, Any]
    provenance: dict[str, Any] | None = Field(
        default=None, description="Where a synthesized instance came from (cluster, episodes)."
    )
    # What is derived from the frozen data once: typed views of public/hidden, the prompt.
    _derived: dict[tuple[str, object], Any] = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        # The fields decide; the cache of derived values must not (pydantic compares privates).
        if not isinstance(other, Instance):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.task, self.seed, self.difficulty))

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> Instance:
        copied = super().model_copy(update=update, deep=deep)
        copied._derived = {}  # what was derived from the old data must not answer for the new
        return copied

    def derived(self, key: tuple[str, object], make: Callable[[], T]) -> T:
        """``make()``, computed once per instance and ``key`` (the data is frozen)."""
        if key not in self._derived:
            self._derived[key] = make()
        return self._derived[key]

    def public_as(self, model: type[M]) -> M:
        """``public`` read through the task's own pydantic model (validated once, cached)."""
        return self._view("public", model)

    def hidden_as(self, model: type[M]) -> M:
        """``hidden`` read through the task's own pydantic model (validated once, cached)."""
        return self._view("hidden", model)

    def _view(self, part: str, model: type[M]) -> M:
        return self.derived((part, model), lambda: model.model_validate(getattr(self, part)))

    @property
    def instance_id(self) -> str:
        """Stable id of the problem (task, seed, config): pairs episodes across runs."""
        key = json.dumps([self.task, self.seed, self.config], sort_keys=True, default=str)
        return f"{self.task}:{self.seed}:{hashlib.sha256(key.encode()).hexdigest()[:10]}"
