"""Rendering and tokenizing conversations for training, without loading a model.

A character-level tokenizer with a ChatML-like template stands in for SmolLM2's: the
code under test only needs ``apply_chat_template``, ``__call__`` and ``decode``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from agentharness.agents import ExpertAgent
from agentharness.cli.main import app
from agentharness.core.registry import get_task
from agentharness.rollout.runner import plan, run
from agentharness.store.run import RunDir
from agentharness.train.chat import ChatTemplateError, plain_chat, to_messages, tokenize_chat
from agentharness.train.grpo import (
    GRPOOptions,
    _training_rows,
    prompt_key,
    read_problems,
    rl_rows,
    splice,
    train_grpo,
)
from agentharness.train.model import finite_losses
from agentharness.train.sft import build_examples, train_sft

START, END = "\x01", "\x02"  # one character (= one token) each, like <|im_start|> / <|im_end|>


class CharTokenizer:
    """One token per character; ``START``/``END`` are the special tokens."""

    eos_token_id = ord(END)
    pad_token_id = ord(END)

    def __init__(self, reorder: bool = False) -> None:
        self.reorder = reorder  # a template that is not prefix-preserving

    def apply_chat_template(
        self,
        chat: list[dict[str, str]],
        tokenize: bool = False,
        add_generation_prompt: bool = False,
    ) -> str:
        text = "".join(f"{START}{m['role']}\n{m['content']}{END}\n" for m in chat)
        if self.reorder:
            text = f"[{len(chat)} messages]" + text
        return text + (f"{START}assistant\n" if add_generation_prompt else "")

    def __call__(self, text: str, add_special_tokens: bool = False) -> Any:
        return SimpleNamespace(input_ids=[ord(c) for c in text])

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        text = "".join(chr(i) for i in ids)
        return text.replace(START, "").replace(END, "") if skip_special_tokens else text


CHAT = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "A1"},
    {"role": "user", "content": "<tool_response>\nr\n</tool_response>"},
    {"role": "assistant", "content": "A2"},
]


def test_tokenize_chat_masks_exactly_the_assistant_turns() -> None:
    tok = CharTokenizer()
    ids, mask = tokenize_chat(tok, CHAT)
    assert tok.decode(ids) == tok.apply_chat_template(CHAT)
    trained = "".join(chr(i) for i, m in zip(ids, mask, strict=True) if m)
    assert trained == f"A1{END}\nA2{END}\n"
    with pytest.raises(ChatTemplateError, match="prefix-preserving"):
        tokenize_chat(CharTokenizer(reorder=True), CHAT)


def test_splice_rebuilds_the_next_prompt_after_sampled_tokens() -> None:
    tok = CharTokenizer()
    before, after = CHAT[:2], CHAT[:4]
    sampled = "A1" + END  # the model ended its turn with the end token
    rebuilt = tok.apply_chat_template(before, add_generation_prompt=True) + sampled
    rebuilt += splice(tok, before, "A1", tok.eos_token_id, after)
    assert rebuilt == tok.apply_chat_template(after, add_generation_prompt=True)
    cut = (
        tok.apply_chat_template(before, add_generation_prompt=True) + "A1"
    )  # cut off: no end token
    assert cut + splice(tok, before, "A1", None, after) == rebuilt
    with pytest.raises(ChatTemplateError):
        splice(CharTokenizer(reorder=True), before, "A1", None, after)


def expert_run(tmp_path: Path, task: str = "robot_reach", n: int = 2) -> Path:
    out = tmp_path / "expert"
    run_dir = RunDir(out)
    run_dir.create({"command": "test"})
    asyncio.run(
        run(plan([get_task(task)], n=n, k=1, seed=0, difficulty="easy"), ExpertAgent(), run_dir)
    )
    return out


def test_native_and_text_exports_train_on_what_the_local_agent_sees(tmp_path: Path) -> None:
    """Both SFT export formats become the exact conversation LocalAgent renders."""
    export_sft = pytest.importorskip("agentharness.export.sft").export_sft
    from agentharness.agents.local import LocalAgent

    runs = expert_run(tmp_path)
    export_sft([runs], tmp_path / "native.jsonl", tool_format="native")
    export_sft([runs], tmp_path / "text.jsonl", tool_format="text")
    native = [json.loads(x) for x in (tmp_path / "native.jsonl").read_text().splitlines()]
    text = [json.loads(x) for x in (tmp_path / "text.jsonl").read_text().splitlines()]
    records = list(RunDir(runs).episodes())
    agent = LocalAgent()
    agent._loaded = (None, CharTokenizer())  # render_prompt only needs the tokenizer
    for row_n, row_t, record in zip(native, text, records, strict=True):
        from_native = plain_chat(to_messages(row_n["messages"]), row_n["tools"])
        from_text = plain_chat(to_messages(row_t["messages"]), row_t["tools"])
        assert from_native == from_text
        rendered = agent.render_prompt(record.messages[:-1], record.tools)
        assert rendered == CharTokenizer().apply_chat_template(
            from_native[:-1], add_generation_prompt=True
        )


def test_build_examples_rejects_rows_without_conversations() -> None:
    tok = CharTokenizer()
    with pytest.raises(ValueError, match="row 1 has no 'messages'"):
        build_examples([{"prompt": []}], tok)
    with pytest.raises(ValueError, match="no assistant message"):
        build_examples([{"messages": [{"role": "user", "content": "hi"}]}], tok)
    (ex,) = build_examples([{"messages": CHAT}], tok)
    assert len(ex["input_ids"]) == len(ex["assistant_masks"]) and 1 in ex["assistant_masks"]


def test_per_turn_rows_train_on_their_completion_only() -> None:
    tok = CharTokenizer()
    (ex,) = build_examples([{"prompt": CHAT[:4], "completion": CHAT[4:]}], tok)
    trained = "".join(
        chr(i) for i, m in zip(ex["input_ids"], ex["assistant_masks"], strict=True) if m
    )
    assert trained == f"A2{END}\n"
    with pytest.raises(ValueError, match="no assistant message"):
        build_examples([{"prompt": CHAT[:3], "completion": [CHAT[3]]}], tok)


def test_prompt_keys_survive_a_datasets_round_trip() -> None:
    datasets = pytest.importorskip("datasets")
    instances = [
        get_task(t).instance(s, "easy") for t in ("robot_reach", "thermal") for s in (0, 1)
    ]
    rows = rl_rows(instances)
    table = datasets.Dataset.from_list(rows)
    keys = [prompt_key(r["prompt"]) for r in table]
    assert keys == [prompt_key(r["prompt"]) for r in rows] and len(set(keys)) == 4
    assert rows[0]["prompt"][0]["role"] == "system" and "<tools>" in rows[0]["prompt"][0]["content"]


def test_grpo_reads_rl_rows_and_instance_files(tmp_path: Path) -> None:
    instances = [
        get_task(t).instance(s, "easy") for t in ("robot_reach", "thermal") for s in (0, 1)
    ]
    rl = tmp_path / "rl.jsonl"
    rl.write_text("".join(json.dumps(r) + "\n" for r in rl_rows(instances)))
    plain = tmp_path / "instances.jsonl"
    plain.write_text("".join(i.model_dump_json() + "\n" for i in instances))
    assert read_problems(rl) == read_problems(plain) == instances
    rows = _training_rows(["thermal"], None, plain, GRPOOptions())
    assert [r["task"] for r in rows] == [get_task("thermal").id] * 2
    with pytest.raises(ValueError, match="holds no instance of escape_room"):
        _training_rows(["escape_room"], None, plain, GRPOOptions())


def test_trainers_accept_the_loop_call() -> None:
    """`bootcamp loop` calls fn(data=, out=, model=, max_steps=) for both trainers."""
    import inspect

    for fn in (train_sft, train_grpo):
        inspect.signature(fn).bind(data=Path("d"), out=Path("o"), model=None, max_steps=3)


def test_finite_losses_catches_divergence() -> None:
    assert finite_losses([{"loss": 1.0}, {"grad_norm": 2.0}, {"loss": 0.5}]) == [1.0, 0.5]
    with pytest.raises(FloatingPointError, match="diverged"):
        finite_losses([{"loss": float("nan")}])


def test_bad_options_fail_before_any_model_is_loaded(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"messages": CHAT}) + "\n")
    with pytest.raises(TypeError, match="unknown SFT option"):
        train_sft(data, tmp_path / "o", bogus=1)
    with pytest.raises(ValueError, match="truncation"):
        train_sft(data, tmp_path / "o", truncation="middle")
    with pytest.raises(ValueError, match="does not exist"):
        train_sft(tmp_path / "missing.jsonl", tmp_path / "o")
    with pytest.raises(ValueError, match="num_generations >= 2"):
        train_grpo(["robot_reach"], tmp_path / "o", options=GRPOOptions(num_generations=1))
    with pytest.raises(TypeError, match="unknown GRPO option"):
        train_grpo(["robot_reach"], tmp_path / "o", bogus=1)
    with pytest.raises(ValueError, match="choose auto, float32, bfloat16"):
        train_grpo(["robot_reach"], tmp_path / "o", rollout_dtype="int8")
    with pytest.raises(ValueError, match="neither an RL row"):
        train_grpo([], tmp_path / "o", data=data)


def test_cli_errors_are_clear(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(
        app, ["train", "sft", "--data", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path)]
    )
    assert r.exit_code == 2 and "is not a file" in r.output
    r = runner.invoke(app, ["train", "grpo", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "give --tasks" in r.output
    r = runner.invoke(app, ["train", "grpo", "--tasks", "no_such_task", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "unknown task" in r.output
    r = runner.invoke(
        app, ["train", "grpo", "--tasks", "guess", "--rollout-dtype", "fp8", "--out", str(tmp_path)]
    )
    assert r.exit_code == 2 and "choose auto, float32, bfloat16" in r.output
    data = tmp_path / "bad.jsonl"
    data.write_text("{not json\n")
    r = runner.invoke(app, ["train", "sft", "--data", str(data), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "not a JSON line" in r.output
    # the project's own input errors say how to fix them, without an exception's name
    data.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    r = runner.invoke(app, ["train", "sft", "--data", str(data), "--out", str(tmp_path / "o")])
    (line,) = r.output.strip().splitlines()
    assert r.exit_code == 2 and line.startswith("error: ") and "no assistant message" in line
    assert "ValueError" not in line and "TrainInputError" not in line
