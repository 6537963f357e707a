"""Plain helpers of the export tests (imported by name; fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentharness.agents import make_agent
from agentharness.core.registry import resolve_tasks
from agentharness.rollout.runner import plan, run
from agentharness.store.run import RunDir

# Text tasks whose tool schemas differ in structure ($defs, additionalProperties as a
# schema or a bool, arrays of numbers, enums): the hard case for Arrow schema inference.
TEXT_TASKS = "escape_room,thermal,finance,harmony"


def make_run(
    path: Path, agent: str, tasks: str, *, n: int = 2, k: int = 1, difficulty: str = "easy"
) -> Path:
    items = plan(resolve_tasks(tasks), n=n, k=k, difficulty=difficulty)
    run_dir = RunDir(path)
    run_dir.create({"command": "test"})
    asyncio.run(run(items, make_agent(agent), run_dir, concurrency=4))
    return path


def tiny_tokenizer(chat_template: str) -> Any:
    """A byte-level tokenizer built in memory (no download) with the given chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tok.chat_template = chat_template
    return tok


def trl_template(name: str) -> str:
    """One of the chat templates TRL ships (real model templates, with tool support)."""
    import trl

    path = Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja"
    if not path.exists():
        pytest.skip(f"this TRL version ships no {name}.jinja")
    return path.read_text()
