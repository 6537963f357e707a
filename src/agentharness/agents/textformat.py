"""Tools described in the prompt, for models that write tool calls as text.

Used by the ``local`` agent and by the ``openai`` agent with ``tool_format="text"``
(for servers started without a tool-call parser). The episode parses the calls back
out of the text, in any of the formats :mod:`agentharness.core.parsing` reads.
"""

from __future__ import annotations

import json
from typing import Any

from agentharness.core.messages import Message, TextPart

TOOL_INSTRUCTIONS = """# Tools

You may call one or more functions to assist with the user query.
Function signatures, one JSON schema per line, inside <tools></tools>:
<tools>
{tools}
</tools>

To call a function, write a JSON object with the function name and arguments inside
<tool_call></tool_call> tags, for example:
<tool_call>
{{"name": "function_name", "arguments": {{"arg": "value"}}}}
</tool_call>"""


# What a text-only model sees where an image was: the same words at inference and in training.
IMAGE_PLACEHOLDER = "[image omitted: this model cannot see images]"


def tools_system_prompt(tools: list[dict[str, Any]]) -> str:
    lines = "\n".join(json.dumps(t, separators=(",", ":")) for t in tools)
    return TOOL_INSTRUCTIONS.format(tools=lines)


def with_tools_in_prompt(messages: list[Message], tools: list[dict[str, Any]]) -> list[Message]:
    """Messages with the tool instructions appended to the system prompt (or prepended)."""
    if not tools:
        return messages
    instructions = tools_system_prompt(tools)
    if messages and messages[0].role == "system":
        merged = f"{messages[0].text}\n\n{instructions}"
        return [Message(role="system", content=merged), *messages[1:]]
    return [Message(role="system", content=instructions), *messages]


def as_plain_text(message: Message, *, image_placeholder: str = "[image]") -> Message:
    """A text-only copy: images become placeholders, tool calls become ``<tool_call>`` text.

    For models that see neither images nor native tool calls.
    """
    content = message.content
    if isinstance(content, list):
        content = "\n".join(
            p.text if isinstance(p, TextPart) else image_placeholder for p in content
        )
    if message.role == "assistant" and message.tool_calls:
        calls = "\n".join(
            f'<tool_call>\n{{"name": {json.dumps(c.function.name)}, '
            f'"arguments": {c.function.arguments or "{}"}}}\n</tool_call>'
            for c in message.tool_calls
        )
        content = f"{content}\n{calls}" if content else calls
    if message.role == "tool":
        return Message(role="user", content=f"<tool_response>\n{content or ''}\n</tool_response>")
    return Message(role=message.role, content=content or "")
