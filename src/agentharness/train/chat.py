"""What a text-format model sees, as training text: shared by SFT, GRPO and verl.

The ``local`` agent shows a model its tools in the system prompt, writes tool calls as
``<tool_call>`` text and tool results as user ``<tool_response>`` messages
(:mod:`agentharness.agents.textformat`), then applies the model's chat template. The
trainers here render conversations exactly the same way, so what a model is trained on
is what it sees at inference.

torch and transformers are never imported here; a tokenizer is passed in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# The placeholder LocalAgent.render_prompt puts where an image was (the bundled model is text-only).
from agentharness.agents.textformat import (
    IMAGE_PLACEHOLDER,
    TOOL_INSTRUCTIONS,
    as_plain_text,
    with_tools_in_prompt,
)
from agentharness.core.messages import Message, coerce_message
from agentharness.train import TrainInputError

# The first line of the tool instructions: present when a system prompt already lists the tools.
_TOOLS_MARKER = TOOL_INSTRUCTIONS.splitlines()[0]

ChatTurn = dict[str, str]


class ChatTemplateError(TrainInputError):
    """The tokenizer's chat template cannot be used for incremental (multi-turn) training."""


def to_messages(raw: list[dict[str, Any]] | list[Message]) -> list[Message]:
    """Messages from OpenAI dicts (as exported or read back from a dataset).

    Keys a dataset filled with ``None`` (Arrow unifies struct fields across rows) are dropped,
    and tool-call arguments exported as JSON objects (for chat templates) become the JSON
    strings of the OpenAI wire format again.
    """
    out: list[Message] = []
    for m in raw:
        if isinstance(m, Message):
            out.append(m)
            continue
        clean = {k: v for k, v in m.items() if v is not None}
        if clean.get("tool_calls"):
            clean["tool_calls"] = [_wire_call(c) for c in clean["tool_calls"]]
        role = clean.get("role", "assistant")
        out.append(coerce_message(clean) if role == "assistant" else Message.model_validate(clean))
    return out


def _wire_call(call: dict[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function") or {})
    args = function.get("arguments")
    if args is not None and not isinstance(args, str):
        function["arguments"] = json.dumps(args)
    return {**call, "function": function}


def plain_chat(messages: list[Message], tools: list[dict[str, Any]] | None) -> list[ChatTurn]:
    """``messages`` as the ``local`` agent renders them: tools in the system prompt, text only.

    Tool calls become ``<tool_call>`` text, tool results user ``<tool_response>`` messages,
    images a placeholder. Tools already described in the system prompt (data exported with
    ``--tool-format text``) are not added twice.
    """
    has_tools = (
        bool(messages) and messages[0].role == "system" and _TOOLS_MARKER in messages[0].text
    )
    with_tools = messages if has_tools or not tools else with_tools_in_prompt(messages, tools)
    plain = [as_plain_text(m, image_placeholder=IMAGE_PLACEHOLDER) for m in with_tools]
    return [{"role": m.role, "content": m.text} for m in plain]


def render(tokenizer: Any, chat: list[ChatTurn], *, generation_prompt: bool) -> str:
    """The chat template applied to ``chat`` as text (as LocalAgent.render_prompt does)."""
    return str(
        tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=generation_prompt)
    )


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` without added special tokens (the template already has them)."""
    return list(tokenizer(text, add_special_tokens=False).input_ids)


def tokenize_chat(
    tokenizer: Any, chat: list[ChatTurn], *, train_from: int = 0
) -> tuple[list[int], list[int]]:
    """Token ids of a whole conversation and a mask that is 1 on assistant-written tokens.

    Each assistant message is trained on from the end of its generation prompt
    (``<|im_start|>assistant\\n`` for ChatML) through its end-of-turn marker, so a model
    learns to write the turn and to stop. Everything else (system, user, tool results)
    is context, and so are assistant messages before index ``train_from`` (a per-turn
    row trains on its last turn only). Raises :class:`ChatTemplateError` when the template is not
    prefix-preserving (rendering a longer conversation must extend the shorter one).
    """
    ids: list[int] = []
    mask: list[int] = []
    done = ""
    for i, turn in enumerate(chat):
        if turn["role"] == "assistant":
            start = render(tokenizer, chat[:i], generation_prompt=True) if i else ""
            _append(tokenizer, ids, mask, done, start, 0)
            end = render(tokenizer, chat[: i + 1], generation_prompt=False)
            _append(tokenizer, ids, mask, start, end, int(i >= train_from))
            done = end
    full = render(tokenizer, chat, generation_prompt=False)
    _append(tokenizer, ids, mask, done, full, 0)
    return ids, mask


def _append(
    tokenizer: Any, ids: list[int], mask: list[int], before: str, after: str, bit: int
) -> None:
    if not after.startswith(before):
        raise ChatTemplateError(
            "the chat template is not prefix-preserving (a longer conversation does not extend the "
            "rendering of a shorter one), so assistant turns cannot be located for training"
        )
    new = encode(tokenizer, after[len(before) :])
    ids.extend(new)
    mask.extend([bit] * len(new))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; blank lines skipped, a bad line is an error naming its number."""
    rows: list[dict[str, Any]] = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise TrainInputError(f"{path}:{lineno}: not a JSON line ({e.msg})") from e
        if not isinstance(row, dict):
            raise TrainInputError(f"{path}:{lineno}: expected a JSON object per line")
        rows.append(row)
    return rows
