"""Supervised fine-tuning on exported trajectories with TRL's ``SFTTrainer``.

Input is the SFT JSONL of :func:`agentharness.export.sft.export_sft`: one conversation
per line, ``{"messages": [...OpenAI chat...], "tools": [...function schemas...], ...}``,
with tool calls either native (``tool_calls``) or already written as text
(``--tool-format text``). Every conversation is rendered the way the ``local`` agent
shows it to the model (:mod:`agentharness.train.chat`), tokenized once, and trained on
with the loss on assistant-written tokens only. The result is saved with
``save_pretrained`` into ``OUT/final``, which ``--agent local --model OUT/final`` loads.

torch, transformers, trl, peft and datasets are imported only when training starts.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agentharness.train import TrainInputError
from agentharness.train.allocator import running_allocator
from agentharness.train.chat import plain_chat, read_jsonl, to_messages, tokenize_chat
from agentharness.train.model import (
    RunOptions,
    finite_losses,
    load_trainable,
    lora_config,
    peak_resident_gb,
    resolve_dtype,
    resume_checkpoint,
    save_final,
    write_json,
)


@dataclass(frozen=True)
class SFTOptions(RunOptions):
    """The knobs of an SFT run (defaults suit the 135M bundled model on CPU)."""

    epochs: float = 1.0
    learning_rate: float = 5e-5
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int = 2048
    truncation: str = "keep_start"  # or keep_end: which side of an over-long conversation to keep
    warmup_steps: int = 0
    weight_decay: float = 0.0


def sft_chats(
    rows: list[dict[str, Any]], *, source: str = "data"
) -> list[tuple[list[dict[str, Any]], int]]:
    """Each SFT row as a plain chat and the index of its first message trained on.

    Rows are whole conversations (``messages``) or per-turn rows (``prompt`` +
    ``completion``, from ``export_sft(per_turn=True)``), trained on their completion only.
    A row without a ``messages`` list or without an assistant turn is an error naming it
    (checked before any model is loaded).
    """
    chats = []
    for i, row in enumerate(rows, 1):
        raw = row.get("messages")
        completion = row.get("completion")
        if raw is None and isinstance(row.get("prompt"), list) and isinstance(completion, list):
            raw = [*row["prompt"], *completion]  # a per-turn row: train on its completion only
        if not isinstance(raw, list) or not raw:
            raise TrainInputError(f"{source}: row {i} has no 'messages' list (is this SFT data?)")
        chat = plain_chat(to_messages(raw), row.get("tools"))
        train_from = (
            len(chat) - len(completion) if row.get("messages") is None and completion else 0
        )
        if not any(t["role"] == "assistant" for t in chat[train_from:]):
            raise TrainInputError(f"{source}: row {i} has no assistant message to learn from")
        chats.append((chat, train_from))
    return chats


def build_examples(
    rows: list[dict[str, Any]], tokenizer: Any, *, source: str = "data"
) -> list[dict[str, list[int]]]:
    """Tokenized examples (``input_ids``, ``assistant_masks``) from SFT rows (:func:`sft_chats`)."""
    return tokenize_chats(sft_chats(rows, source=source), tokenizer)


def tokenize_chats(
    chats: list[tuple[list[dict[str, Any]], int]], tokenizer: Any
) -> list[dict[str, list[int]]]:
    """Each ``(chat, train_from)`` of :func:`sft_chats` as ``input_ids`` + ``assistant_masks``."""
    examples = []
    for chat, train_from in chats:
        ids, mask = tokenize_chat(tokenizer, chat, train_from=train_from)
        examples.append({"input_ids": ids, "assistant_masks": mask})
    return examples


def train_sft(
    data: Path,
    out: Path,
    model: str | None = None,
    max_steps: int | None = None,
    *,
    options: SFTOptions | None = None,
    **overrides: Any,
) -> Path:
    """Fine-tune ``model`` (default: the bundled SmolLM2) on the SFT JSONL ``data``.

    ``max_steps`` bounds the optimizer steps (otherwise ``options.epochs`` passes over the
    data). Knobs come from ``options`` and/or keyword overrides (``learning_rate=1e-4``,
    ``lora=True`` ...). Writes ``OUT/final`` (model + tokenizer, LoRA merged) and
    ``OUT/train_summary.json`` (losses, steps, sizes, seconds) and returns ``OUT/final``.
    Raises ``ValueError`` on unreadable data and ``FloatingPointError`` if the loss diverges.
    """
    opts = options or SFTOptions()
    if overrides:
        unknown = set(overrides) - set(SFTOptions.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown SFT option(s): {', '.join(sorted(unknown))}")
        opts = SFTOptions(**{**asdict(opts), **overrides})
    # "auto" becomes what this machine runs fast, and the summary records which
    opts = replace(opts, train_dtype=resolve_dtype(opts.train_dtype, "train_dtype"))
    if opts.truncation not in ("keep_start", "keep_end"):
        raise TrainInputError(f"truncation must be keep_start or keep_end, not {opts.truncation!r}")
    if not data.exists():
        raise TrainInputError(
            f"SFT data {data} does not exist (write it with `bootcamp export sft`)"
        )
    rows = read_jsonl(data)
    if not rows:
        raise TrainInputError(f"{data} holds no SFT rows")
    chats = sft_chats(rows, source=str(data))  # bad rows fail before a model is loaded
    checkpoint = resume_checkpoint(out / "trainer", opts.resume)  # fail before loading a model

    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    started = time.time()
    net, tokenizer = load_trainable(model)
    examples = tokenize_chats(chats, tokenizer)
    _check_fits(examples, opts.max_length, opts.truncation)
    random.Random(opts.seed).shuffle(examples)
    dataset = Dataset.from_list(examples)
    config = SFTConfig(
        output_dir=str(out / "trainer"),
        max_steps=max_steps if max_steps is not None else -1,
        num_train_epochs=opts.epochs,
        per_device_train_batch_size=opts.batch_size,
        gradient_accumulation_steps=opts.grad_accum,
        learning_rate=opts.learning_rate,
        warmup_steps=opts.warmup_steps,
        weight_decay=opts.weight_decay,
        max_length=opts.max_length,
        truncation_mode=opts.truncation,
        logging_steps=opts.logging_steps,
        **{
            **opts.training_args(),
            **opts.extra,
        },
    )
    peft_config = lora_config(opts.lora_r, opts.lora_alpha) if opts.lora else None
    trainer = SFTTrainer(
        model=net,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    trainer.train(resume_from_checkpoint=checkpoint)
    losses = finite_losses(trainer.state.log_history)
    final = save_final(trainer.model, tokenizer, out / "final")
    n_tokens = [len(e["input_ids"]) for e in examples]
    write_json(
        out / "train_summary.json",
        {
            "kind": "sft",
            "data": str(data),
            "model": model or "smollm2",
            "examples": len(examples),
            "tokens_per_example": {"min": min(n_tokens), "max": max(n_tokens)},
            "assistant_tokens": sum(sum(e["assistant_masks"]) for e in examples),
            "steps": trainer.state.global_step,
            "losses": losses,
            "options": asdict(opts),
            "max_steps": max_steps,
            "seconds": round(time.time() - started, 1),
            "peak_resident_gb": peak_resident_gb(),
            "allocator": running_allocator(),
            "final": str(final),
        },
    )
    return final


def _check_fits(examples: list[dict[str, list[int]]], max_length: int, truncation: str) -> None:
    """Fail early when truncation to ``max_length`` would leave nothing to learn from."""
    cut = slice(None, max_length) if truncation == "keep_start" else slice(-max_length, None)
    if not any(1 in e["assistant_masks"][cut] for e in examples):
        longest = max(len(e["input_ids"]) for e in examples)
        raise TrainInputError(
            f"with max_length={max_length} ({truncation}) no example keeps an assistant token "
            f"(examples are up to {longest} tokens); raise --max-length"
        )
