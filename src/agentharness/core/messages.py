"""Chat messages in the OpenAI chat schema.

Messages are frozen pydantic models whose :meth:`Message.to_openai` is exactly the
OpenAI wire format, so they go to any OpenAI-compatible endpoint unchanged. Content is
either a string or a list of parts (text and PNG images). In memory an image is a
base64 ``data:`` URL; the run store swaps it for a file reference when it writes a log.

A tool message also carries the call's :class:`ToolOutcome` — its structured data and
whether it failed — for scripted policies and analysis; it is never sent to a model.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]

PNG_DATA_URL_PREFIX = "data:image/png;base64,"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Frozen):
    type: Literal["text"] = "text"
    text: str


class ImageURL(_Frozen):
    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(_Frozen):
    type: Literal["image_url"] = "image_url"
    image_url: ImageURL

    @classmethod
    def from_png(cls, png: bytes) -> ImagePart:
        return cls(image_url=ImageURL(url=PNG_DATA_URL_PREFIX + base64.b64encode(png).decode()))

    def png_bytes(self) -> bytes | None:
        """The PNG bytes when the image is inline, ``None`` when it is a file or remote URL."""
        url = self.image_url.url
        if url.startswith(PNG_DATA_URL_PREFIX):
            return base64.b64decode(url[len(PNG_DATA_URL_PREFIX) :])
        return None


ContentPart = TextPart | ImagePart


class FunctionCall(_Frozen):
    name: str
    arguments: str = Field(description="JSON-encoded arguments, exactly as OpenAI sends them.")


class ToolCall(_Frozen):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall

    @classmethod
    def make(cls, id: str, name: str, arguments: dict[str, Any] | str) -> ToolCall:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return cls(id=id, function=FunctionCall(name=name, arguments=args))


class ToolOutcome(_Frozen):
    """A tool call's result as data, beside the text the model reads.

    ``data`` is what the tool returned (a JSON value; ``None`` for a text-only result)
    and ``is_error`` says whether the call failed. Scripted experts read this instead of
    parsing the text; nothing here is sent to a model (the text says the same in words).
    """

    data: Any = None
    is_error: bool = False


class Message(_Frozen):
    """One chat message. :meth:`to_openai` is the OpenAI wire format."""

    role: Role
    content: str | list[ContentPart] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    # Reasoning text some servers return separately (vLLM ``reasoning_content``).
    reasoning_content: str | None = None
    # Tool messages: the structured result (kept in logs; never sent to a model).
    outcome: ToolOutcome | None = None

    @property
    def text(self) -> str:
        """All text parts joined; images are left out."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> list[ImagePart]:
        if isinstance(self.content, list):
            return [p for p in self.content if isinstance(p, ImagePart)]
        return []

    def to_openai(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, exclude={"outcome"})


def system(text: str) -> Message:
    return Message(role="system", content=text)


def user(text: str, images: list[bytes] | None = None) -> Message:
    """A user message; ``images`` are PNG bytes placed after the text."""
    if not images:
        return Message(role="user", content=text)
    parts: list[ContentPart] = [TextPart(text=text)]
    parts.extend(ImagePart.from_png(png) for png in images)
    return Message(role="user", content=parts)


def assistant(text: str | None = None, tool_calls: list[ToolCall] | None = None) -> Message:
    return Message(role="assistant", content=text, tool_calls=tool_calls or None)


def tool_message(call_id: str, name: str, text: str, outcome: ToolOutcome | None = None) -> Message:
    return Message(role="tool", tool_call_id=call_id, name=name, content=text, outcome=outcome)


def png_bytes(image: Any) -> bytes:
    """Encode a Pillow image as PNG bytes."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def coerce_message(turn: Message | dict[str, Any] | str) -> Message:
    """Accept an assistant turn as a Message, an OpenAI dict or plain text."""
    if isinstance(turn, Message):
        return turn
    if isinstance(turn, str):
        return Message(role="assistant", content=turn)
    data = dict(turn)
    data.setdefault("role", "assistant")
    # OpenAI SDK dumps carry fields we do not model (refusal, audio, annotations ...).
    known = set(Message.model_fields)
    return Message.model_validate({k: v for k, v in data.items() if k in known})


def to_openai_payload(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as an OpenAI request body, valid for strict servers.

    A tool result whose call was written in text (so the assistant message carries no
    ``tool_calls``) is sent as a user message wrapped in ``<tool_response>``, the way
    Hermes-style chat templates render tool results anyway.
    """
    payload: list[dict[str, Any]] = []
    open_ids: frozenset[str] = frozenset()
    for m in messages:
        entry, open_ids = openai_payload_entry(m, open_ids)
        payload.append(entry)
    return payload


def openai_payload_entry(
    m: Message, open_ids: frozenset[str]
) -> tuple[dict[str, Any], frozenset[str]]:
    """One message of :func:`to_openai_payload`, given the tool-call ids still open before it.

    Returns the wire dict and the open ids after it, so callers can encode a growing
    conversation incrementally (the payload of a message depends only on what precedes it).
    """
    if m.role == "assistant":
        d = m.to_openai()
        d.pop("reasoning_content", None)
        return d, frozenset(c.id for c in m.tool_calls or [])
    if m.role == "tool" and m.tool_call_id not in open_ids:
        return {"role": "user", "content": f"<tool_response>\n{m.text}\n</tool_response>"}, open_ids
    return m.to_openai(), open_ids
