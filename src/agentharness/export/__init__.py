"""Export stage: run directories as training data.

* :mod:`agentharness.export.sft` — conversational JSONL (messages + tools [+ images]) for HF
  ``datasets`` and TRL's ``SFTTrainer``; ``native`` or ``text`` tool format; per-turn rows.
* :mod:`agentharness.export.rl` — RL prompts carrying the serialized instance: verl parquet
  (with tool/interaction configs from :mod:`agentharness.export.verl`), TRL JSONL, and GRPO
  groups with normalized advantages.

Every exporter is a pure function of its input records. Runs are read by
:func:`agentharness.store.load_runs`: unusable runs raise
:class:`~agentharness.store.run.RunDirError`; readable input an exporter cannot use (mixed
task versions, a bad format) raises :class:`~agentharness.export.common.ExportError`;
both say what to fix.
"""

from agentharness.export.common import ExportError

__all__ = ["ExportError"]
