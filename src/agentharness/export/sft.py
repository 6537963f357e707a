"""SFT export: episodes as conversational JSONL for HF ``datasets`` and TRL's ``SFTTrainer``.

One row per episode (or, with ``per_turn``, one per assistant turn)::

    {"messages": [...],            # OpenAI chat messages (see below)
     "tools": [...],               # OpenAI function schemas the agent was offered
     "images": ["/abs/x.png"],     # image files, in order of the image placeholders
     "task": "escape_room-v1", "episode_id": "...", "instance_id": "...",
     "agent": "expert", "reward": 0.93, "success": true, "end_reason": "answered"}

Representation, chosen so that the file round-trips through ``datasets.load_dataset("json",
data_files=...)`` into a chat template unchanged (tested):

* ``tool_calls[].function.arguments`` are **JSON objects (dicts)**, not the JSON strings of
  the OpenAI wire format: chat templates (Qwen2.5, Llama 3.x, ...) render them with
  ``tojson`` and would double-encode a string. Arguments that were not valid JSON stay the
  string the model wrote. ``datasets`` >= 4.7 stores fields whose structure differs across
  rows (tool arguments, tool schemas of different tasks) with its ``Json`` type instead of
  merging them into one struct padded with nulls, so every row loads back as written (floats
  to about 10 decimal places: the JSON loader parses them with pandas' fast float parser).
* A tool result whose call was written in text (no matching ``tool_calls`` id) becomes a user
  message ``<tool_response>...</tool_response>``, as :func:`~agentharness.core.messages.to_openai_payload`
  sends it to models. An assistant turn that only calls tools has ``"content": ""``.
* Images (vision tasks): each image part becomes ``{"type": "image"}`` in the message's content
  list and its PNG is written once under ``<out stem>_images/``; ``images`` lists their absolute
  paths in order. This is TRL's VLM layout: ``prepare_multimodal_messages(messages, images)``
  fills the placeholders, and ``dataset.cast_column("images", List(Image()))`` decodes them.
  When some rows have images, rows without any have ``"images": []``; an export with no
  image at all has no ``images`` column, because ``SFTTrainer`` takes any dataset with one
  for a vision dataset and refuses it with a text-only model. ``images=False`` replaces
  images with a text placeholder and keeps every content a string (for text-only models).
* ``tool_format="text"`` is for models without native tool calling (the bundled SmolLM2): the
  conversation is rendered exactly as the ``local`` agent sees it at inference
  (:func:`~agentharness.agents.textformat.with_tools_in_prompt` then
  :func:`~agentharness.agents.textformat.as_plain_text`): tool schemas in the system prompt,
  calls as ``<tool_call>{json}</tool_call>`` in the assistant text, results as user
  ``<tool_response>`` messages, images as a placeholder. Messages are then ``{"role",
  "content"}`` strings only, and ``tools`` is ``null``.
* ``per_turn`` (prefix expansion): one row per assistant turn in TRL's conversational
  prompt-completion layout, ``{"prompt": messages before the turn, "completion": [the turn],
  ...}`` plus ``turn`` (1-based); ``SFTTrainer`` then computes the loss on that turn only.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from agentharness.agents.textformat import IMAGE_PLACEHOLDER, as_plain_text, with_tools_in_prompt
from agentharness.core.messages import ImagePart, Message, TextPart
from agentharness.export.common import (
    ExportError,
    ImageStore,
    check_versions,
    image_ref,
    parse_arguments,
    text_of,
    write_jsonl,
)
from agentharness.store.reader import load_runs
from agentharness.store.schema import EpisodeRecord

ToolFormat = Literal["native", "text"]
TOOL_FORMATS: tuple[str, ...] = ("native", "text")
# What the local (text-only) agent shows in place of an image; keep in sync with agents/local.py.


def images_dir_for(out: Path) -> Path:
    """Where the image files of an export written to ``out`` go."""
    return out.with_name(f"{out.stem}_images")


def modality_paths(out: Path) -> tuple[Path, Path]:
    """The text-only and the image files that ``split_modality`` writes for ``out``."""
    return out.with_name(f"{out.stem}.text{out.suffix}"), out.with_name(
        f"{out.stem}.vision{out.suffix}"
    )


def split_by_modality(
    rows: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(text-only rows without an ``images`` column, rows with images)."""
    text = [{k: v for k, v in r.items() if k != "images"} for r in rows if not r.get("images")]
    vision = [r for r in rows if r.get("images")]
    return text, vision


def _native_messages(
    messages: Sequence[Message], store: ImageStore | None, keep_images: bool
) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Chat dicts plus, per message, the image references it holds (in order)."""
    out: list[dict[str, Any]] = []
    images: list[list[str]] = []
    open_ids: set[str] = set()
    for m in messages:
        refs: list[str] = []
        if m.role == "assistant":
            open_ids = {c.id for c in m.tool_calls or []}
            d: dict[str, Any] = {"role": "assistant", "content": text_of(m, IMAGE_PLACEHOLDER)}
            if m.tool_calls:
                d["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.function.name,
                            "arguments": parse_arguments(c.function.arguments),
                        },
                    }
                    for c in m.tool_calls
                ]
            if m.reasoning_content:
                d["reasoning_content"] = m.reasoning_content
        elif m.role == "tool" and m.tool_call_id in open_ids:
            d = {
                "role": "tool",
                "tool_call_id": m.tool_call_id,
                "name": m.name,
                "content": text_of(m, IMAGE_PLACEHOLDER),
            }
        elif m.role == "tool":
            # A result of a call written in text: sent to models as a user message.
            d = {"role": "user", "content": f"<tool_response>\n{m.text}\n</tool_response>"}
        elif keep_images and m.images:
            parts: list[dict[str, Any]] = []
            for p in m.content or []:
                if isinstance(p, TextPart):
                    parts.append({"type": "text", "text": p.text})
                elif isinstance(p, ImagePart):
                    parts.append({"type": "image"})
                    refs.append(image_ref(p, store))
            d = {"role": m.role, "content": parts}
        else:
            d = {"role": m.role, "content": text_of(m, IMAGE_PLACEHOLDER)}
        out.append(d)
        images.append(refs)
    return out, images


def _text_messages(record: EpisodeRecord) -> list[dict[str, Any]]:
    """The conversation exactly as the local agent renders it (see agents/local.py)."""
    plain = [
        as_plain_text(m, image_placeholder=IMAGE_PLACEHOLDER)
        for m in with_tools_in_prompt(record.messages, record.tools)
    ]
    return [{"role": m.role, "content": m.text} for m in plain]


def _metadata(record: EpisodeRecord) -> dict[str, Any]:
    return {
        "task": record.task,
        "episode_id": record.episode_id,
        "instance_id": record.instance.instance_id,
        "agent": record.agent,
        "reward": record.reward.total,
        "success": record.reward.success,
        "end_reason": record.end_reason,
    }


def sft_rows(
    records: list[EpisodeRecord],
    *,
    per_turn: bool = False,
    tool_format: ToolFormat = "native",
    images: bool = True,
    image_store: ImageStore | None = None,
) -> list[dict[str, Any]]:
    """SFT rows for ``records`` (see the module docstring for the layout).

    Records must hold their images inline (``load_runs(..., resolve_images=True)``);
    with ``image_store`` the PNGs are written to files and rows refer to their paths,
    otherwise rows keep ``data:`` URLs. Pure: same records, same rows.
    """
    if tool_format not in TOOL_FORMATS:
        raise ExportError(
            f"tool format must be one of {', '.join(TOOL_FORMATS)}, got {tool_format!r}"
        )
    rows: list[dict[str, Any]] = []
    for record in records:
        if tool_format == "text":
            messages = _text_messages(record)
            per_message_images: list[list[str]] = [[] for _ in messages]
            tools: list[dict[str, Any]] | None = None
        else:
            messages, per_message_images = _native_messages(record.messages, image_store, images)
            tools = record.tools
        meta = _metadata(record)
        if not per_turn:
            refs = [ref for group in per_message_images for ref in group]
            rows.append({"messages": messages, "tools": tools, "images": refs, **meta})
            continue
        turn = 0
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            turn += 1
            refs = [ref for group in per_message_images[:i] for ref in group]
            rows.append(
                {
                    "prompt": messages[:i],
                    "completion": [m],
                    "tools": tools,
                    "images": refs,
                    **meta,
                    "turn": turn,
                }
            )
    if not any(row["images"] for row in rows):
        # TRL's SFTTrainer takes any dataset with an "images" column for a vision dataset
        # and refuses it with a text-only model, so text-only exports have none.
        for row in rows:
            del row["images"]
    return rows


def export_sft(
    run_dirs: list[Path],
    out: Path,
    *,
    per_turn: bool = False,
    tool_format: ToolFormat = "native",
    images: bool = True,
    allow_mixed_versions: bool = False,
    split_modality: bool = False,
) -> int:
    """Write the SFT JSONL of ``run_dirs`` to ``out``; returns the number of rows written.

    Image files go to :func:`images_dir_for` ``(out)``. A mix of text-only and image rows
    is written as is with a warning (TRL's ``SFTTrainer`` takes the whole file for a vision
    dataset, so a text-only model refuses it and a vision model gets empty image lists);
    ``split_modality`` writes the two kinds to :func:`modality_paths` ``(out)`` instead, each
    only when it has rows. Raises :class:`~agentharness.store.run.RunDirError` for missing or
    foreign run directories and :class:`~agentharness.export.common.ExportError` for runs
    that mix versions of a task (unless ``allow_mixed_versions``).
    """
    records = load_runs(run_dirs, resolve_images=True).emit_warnings().records
    check_versions((r.task for r in records), allow_mixed=allow_mixed_versions)
    store = ImageStore(images_dir_for(out)) if images and tool_format == "native" else None
    rows = sft_rows(
        records, per_turn=per_turn, tool_format=tool_format, images=images, image_store=store
    )
    text, vision = split_by_modality(rows)
    if split_modality:
        text_out, vision_out = modality_paths(out)
        return (write_jsonl(text, text_out) if text else 0) + (
            write_jsonl(vision, vision_out) if vision else 0
        )
    if text and vision:
        warnings.warn(
            f"{len(vision)} of {len(rows)} rows have images and {len(text)} are text-only: "
            "TRL's SFTTrainer treats the whole file as a vision dataset (a text-only model "
            "refuses it); pass --split-modality for one file per modality, or --no-images",
            UserWarning,
            stacklevel=2,
        )
    return write_jsonl(rows, out)
