"""The frozen description of one generated problem."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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

    @property
    def instance_id(self) -> str:
        """Stable id of the problem (task, seed, config): pairs episodes across runs."""
        key = json.dumps([self.task, self.seed, self.config], sort_keys=True, default=str)
        return f"{self.task}:{self.seed}:{hashlib.sha256(key.encode()).hexdigest()[:10]}"
