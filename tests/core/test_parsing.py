from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agentharness.core.messages import Message, ToolCall
from agentharness.core.parsing import answered_calls, parse_turn


def text(s: str) -> Message:
    return Message(role="assistant", content=s)


def test_native_tool_calls_with_string_arguments() -> None:
    msg = Message(role="assistant", tool_calls=[ToolCall.make("a", "go", {"direction": "north"})])
    parsed = parse_turn(msg)
    assert parsed.source == "native"
    assert [(c.id, c.name, c.arguments) for c in parsed.calls] == [
        ("a", "go", {"direction": "north"})
    ]


def test_native_arguments_encoded_twice() -> None:
    msg = Message(
        role="assistant", tool_calls=[ToolCall.make("a", "go", json.dumps(json.dumps({"d": 1})))]
    )
    assert parse_turn(msg).calls[0].arguments == {"d": 1}


def test_native_arguments_not_an_object_is_an_error() -> None:
    msg = Message(role="assistant", tool_calls=[ToolCall.make("a", "go", "[1, 2]")])
    parsed = parse_turn(msg)
    assert not parsed.calls and "not a JSON object" in parsed.errors[0]


def test_hermes_block_with_prose_and_several_calls() -> None:
    parsed = parse_turn(
        text(
            'I will look first.\n<tool_call>\n{"name": "look", "arguments": {}}\n</tool_call>\n'
            'then\n<tool_call>{"name": "go", "arguments": {"direction": "east"}}</tool_call> ok'
        )
    )
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("look", {}),
        ("go", {"direction": "east"}),
    ]
    assert parsed.ok and parsed.source == "text"
    assert len({c.id for c in parsed.calls}) == 2


def test_repairs_trailing_commas_single_quotes_and_string_arguments() -> None:
    parsed = parse_turn(
        text(
            "<tool_call>{'name': 'go', 'arguments': {'direction': 'west', 'fast': True,},}</tool_call>"
            '<tool_call>{"name": "take", "arguments": "{\\"item\\": \\"key\\"}"}</tool_call>'
        )
    )
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("go", {"direction": "west", "fast": True}),
        ("take", {"item": "key"}),
    ]


def test_unclosed_tool_call_at_end_of_turn() -> None:
    parsed = parse_turn(text('<tool_call>{"name": "look", "arguments": {}}'))
    assert [c.name for c in parsed.calls] == ["look"]


def test_qwen3_coder_xml() -> None:
    parsed = parse_turn(
        text(
            "<tool_call>\n<function=simulate>\n<parameter=powers>\n[1.0, 2.5]\n</parameter>\n"
            "<parameter=label>\nrun one\n</parameter>\n</function>\n</tool_call>"
        )
    )
    assert [(c.name, c.arguments) for c in parsed.calls] == [
        ("simulate", {"powers": [1.0, 2.5], "label": "run one"})
    ]


def test_fenced_json_and_openai_shape() -> None:
    parsed = parse_turn(
        text(
            'Here:\n```json\n{"type": "function", "function": {"name": "look", "arguments": "{}"}}\n```'
        )
    )
    assert [(c.name, c.arguments) for c in parsed.calls] == [("look", {})]


def test_bare_json_call_in_prose() -> None:
    parsed = parse_turn(text('Calling {"name": "read", "arguments": {"item": "note"}} now.'))
    assert [(c.name, c.arguments) for c in parsed.calls] == [("read", {"item": "note"})]


def test_plain_prose_has_no_calls_and_no_errors() -> None:
    parsed = parse_turn(text('The answer is probably {not a call} and json like {"a": 1}.'))
    assert parsed.calls == [] and parsed.errors == [] and parsed.source == "none"


def test_broken_tool_call_is_a_format_error() -> None:
    parsed = parse_turn(text("<tool_call>{this is not json</tool_call>"))
    assert not parsed.calls and parsed.errors and "could not parse" in parsed.errors[0]


def test_call_without_name_is_a_format_error() -> None:
    parsed = parse_turn(text('<tool_call>{"arguments": {"x": 1}}</tool_call>'))
    assert not parsed.calls and "needs a 'name'" in parsed.errors[0]


def test_empty_tag_is_a_format_error() -> None:
    assert parse_turn(text("<tool_call></tool_call>")).errors


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(s: str) -> None:
    parse_turn(text(s))


_fragments = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<function=",
        "<function=go>",
        "</function>",
        "<parameter=x>",
        "</parameter>",
        "```json\n",
        "```",
        "{",
        "}",
        "[",
        "]",
        '"name"',
        ":",
        ",",
        '"arguments"',
        "'",
        '"',
        "\\",
        "True",
        "null",
        "1e999",
        "NaN",
        "{'a': 1,}",
        "...",
        "b''",
        "1j",
        "\n",
        " ",
    ]
)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(_fragments, st.text(max_size=5)), max_size=30))
def test_never_raises_on_tool_call_like_text(parts: list[str]) -> None:
    parsed = parse_turn(text("".join(parts)))
    for call in parsed.calls:
        assert isinstance(call.name, str) and isinstance(call.arguments, dict)
        json.dumps(call.arguments)  # what the episode log will write


def test_python_literals_json_cannot_hold_are_format_errors() -> None:
    # `...` is a valid Python literal (Ellipsis); a model's "[1, ...]" once reached the
    # episode log and ended a GRPO run when the record failed to encode.
    for arguments in ("{'x': [1, ...]}", "{'x': b'a'}", "{'x': 1j}", "{'x': {1, 2}}"):
        parsed = parse_turn(
            text(f"<tool_call>{{'name': 'f', 'arguments': {arguments}}}</tool_call>")
        )
        assert not parsed.calls and parsed.errors, arguments


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.text(max_size=200))
def test_never_raises_on_native_garbage(name: str, arguments: str) -> None:
    msg = Message(role="assistant", tool_calls=[ToolCall.make("x", name, arguments)])
    parsed = parse_turn(msg)
    assert all(isinstance(c.arguments, dict) for c in parsed.calls)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=8),
            lambda children: (
                st.lists(children, max_size=3)
                | st.dictionaries(st.text(max_size=5), children, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=4,
    )
)
def test_round_trips_any_json_arguments(arguments: dict) -> None:
    body = json.dumps({"name": "tool", "arguments": arguments})
    parsed = parse_turn(text(f"<tool_call>{body}</tool_call>"))
    assert [(c.name, c.arguments) for c in parsed.calls] == [("tool", arguments)]


def test_answered_calls_pairs_native_and_text_calls_by_id() -> None:
    from agentharness import make

    ep = make("guess", difficulty="easy").reset(seed=2)
    ep.step(
        Message(
            role="assistant",
            tool_calls=[
                ToolCall.make("n1", "probe", {"guess": 1}),
                ToolCall.make("n2", "probe", {"guess": 2}),
            ],
        )
    )
    ep.step('<tool_call>{"name": "probe", "arguments": {"guess": 3}}</tool_call>')
    pairs = list(answered_calls(ep.messages))
    assert [(c.id, c.arguments["guess"]) for c, _ in pairs] == [
        ("n1", 1),
        ("n2", 2),
        ("call_2_0", 3),
    ]
    assert all(m.tool_call_id == c.id for c, m in pairs)
    assert [c.id for c, _ in answered_calls(ep.messages, start=len(ep.messages) - 1)] == [
        "call_2_0"
    ]


def test_answered_calls_from_start_parses_only_turns_answered_from_there(monkeypatch) -> None:
    """A caller replaying what is new gets the same pairs as a full replay would, and turns
    answered wholly before ``start`` are not parsed again (each turn once per episode)."""
    import agentharness.core.parsing as parsing
    from agentharness import make

    ep = make("guess", difficulty="easy").reset(seed=2)
    ep.step(
        Message(
            role="assistant",
            tool_calls=[
                ToolCall.make("n1", "probe", {"guess": 1}),
                ToolCall.make("n2", "probe", {"guess": 2}),
            ],
        )
    )
    ep.step("I think it is higher.")  # a turn without calls (the episode nudges)
    ep.step('<tool_call>{"name": "probe", "arguments": {"guess": 3}}</tool_call>')
    ep.step('<tool_call>{"name": "probe", "arguments": {"guess": 4}}</tool_call>')
    messages = ep.messages
    indexed = [(messages.index(m), c.id) for c, m in answered_calls(messages)]
    assert [i for i, _ in indexed] == sorted(i for i, _ in indexed) and len(indexed) == 4

    parsed: list[Message] = []
    real = parsing.parse_turn

    def counting(message: Message, call_id_prefix: str = "call") -> parsing.ParsedTurn:
        parsed.append(message)
        return real(message, call_id_prefix)

    monkeypatch.setattr(parsing, "parse_turn", counting)
    for start in range(len(messages) + 1):
        parsed.clear()
        pairs = [(messages.index(m), c.id) for c, m in answered_calls(messages, start)]
        assert pairs == [(i, cid) for i, cid in indexed if i >= start]
        # a turn is parsed only if the messages up to the next turn reach start
        turns = [i for i, m in enumerate(messages) if m.role == "assistant"]
        ends = [*turns[1:], len(messages)]
        assert parsed == [messages[t] for t, end in zip(turns, ends, strict=True) if end > start]
    parsed.clear()
    list(answered_calls(messages, len(messages)))
    assert parsed == []
    assert list(answered_calls(messages[:2])) == []  # the prompt alone: no turn yet
