from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
from export_helpers import tiny_tokenizer, trl_template

from agentharness import get_task
from agentharness.agents.local import LocalAgent
from agentharness.core.messages import ToolCall, assistant, tool_message, user
from agentharness.export.sft import export_sft, images_dir_for, modality_paths, sft_rows
from agentharness.store.run import RunDir


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def same(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-9 (datasets' JSON loader parses floats to about 10 decimals)."""
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and math.isclose(a, b, rel_tol=1e-9)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def load(path: Path) -> Any:
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(path.parent / "hf")
    )


def test_mixed_task_file_loads_in_datasets_unchanged(text_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    n = export_sft([text_run], out)
    written = read_jsonl(out)
    assert n == len(written) == len(list(RunDir(text_run).episodes()))
    assert len({r["task"] for r in written}) == 4
    ds = load(out)
    assert len(ds) == n
    for row, loaded in zip(written, ds, strict=True):
        # No struct merging across tasks: no None-padded keys, nothing mangled.
        assert same(loaded["messages"], row["messages"])
        assert loaded["tools"] == row["tools"]
        assert same(
            {k: loaded[k] for k in ("task", "episode_id", "reward", "success")},
            {k: row[k] for k in ("task", "episode_id", "reward", "success")},
        )
    calls = [c for r in written for m in r["messages"] for c in m.get("tool_calls", [])]
    assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls)
    assert "images" not in written[0]  # text-only: SFTTrainer would take it for a VLM dataset


def test_trl_chat_template_with_tools_accepts_rows(text_run: Path, tmp_path: Path) -> None:
    from trl.data_utils import apply_chat_template

    out = tmp_path / "sft.jsonl"
    export_sft([text_run], out)
    tok = tiny_tokenizer(trl_template("qwen2_5"))
    for row in load(out):
        text = apply_chat_template({"messages": row["messages"]}, tok, tools=row["tools"])["text"]
        assert "<tools>" in text and row["tools"][0]["function"]["name"] in text
        for m in row["messages"]:
            for c in m.get("tool_calls") or []:
                rendered = json.dumps(
                    {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                )
                assert rendered in text  # arguments rendered once, as a JSON object
        assert '"arguments": "' not in text  # never double-encoded


def tiny_text_model(tok: Any) -> Any:
    """A one-layer Llama over ``tok``: a text-only model for TRL's SFTTrainer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=65536,
        )
    )


def test_sft_trainer_prepares_both_layouts(text_run: Path, tmp_path: Path) -> None:
    from trl import SFTConfig, SFTTrainer

    tok = tiny_tokenizer(trl_template("qwen2_5"))
    model = tiny_text_model(tok)
    args = SFTConfig(
        output_dir=str(tmp_path / "trainer"), report_to=[], max_length=None, use_cpu=True
    )
    whole, per_turn = tmp_path / "whole.jsonl", tmp_path / "turns.jsonl"
    export_sft([text_run], whole)
    n_turns = export_sft([text_run], per_turn, per_turn=True)

    trainer = SFTTrainer(model=model, args=args, train_dataset=load(whole), processing_class=tok)
    assert "input_ids" in trainer.train_dataset.column_names

    trainer = SFTTrainer(model=model, args=args, train_dataset=load(per_turn), processing_class=tok)
    assert len(trainer.train_dataset) == n_turns
    rows = read_jsonl(per_turn)
    for row, ex in zip(rows, trainer.train_dataset, strict=True):
        trained = tok.decode([t for t in ex["labels"] if t != -100])
        (turn,) = row["completion"]
        # The loss covers exactly the completion turn (prompt-completion layout).
        for c in turn.get("tool_calls") or []:
            assert f'"name": "{c["function"]["name"]}"' in trained
        assert trained.endswith("<|im_end|>\n")
        assert trained.count("<|im_end|>") == 1


def test_mixed_modalities_warn_and_split_into_one_file_each(
    text_run: Path, vision_run: Path, tmp_path: Path
) -> None:
    from trl import SFTConfig, SFTTrainer

    mixed = tmp_path / "mixed.jsonl"
    with pytest.warns(UserWarning, match="--split-modality"):
        n = export_sft([text_run, vision_run], mixed)
    out = tmp_path / "split.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert export_sft([text_run, vision_run], out, split_modality=True) == n
    text_path, vision_path = modality_paths(out)
    assert not out.exists() and text_path.name == "split.text.jsonl"
    text, vision = read_jsonl(text_path), read_jsonl(vision_path)
    assert len(text) + len(vision) == n and text and vision
    assert all("images" not in r for r in text) and all(r["images"] for r in vision)
    assert {r["task"] for r in vision} == {get_task("tsp_vision").id}
    assert all(Path(p).is_file() for r in vision for p in r["images"])

    # TRL takes the text file for what it is; the mixed file looks like a vision dataset.
    tok = tiny_tokenizer(trl_template("qwen2_5"))
    args = SFTConfig(output_dir=str(tmp_path / "t"), report_to=[], max_length=None, use_cpu=True)
    trainer = SFTTrainer(
        model=tiny_text_model(tok), args=args, train_dataset=load(text_path), processing_class=tok
    )
    assert len(trainer.train_dataset) == len(text)
    with pytest.raises(ValueError, match="vision-language model"):
        SFTTrainer(
            model=tiny_text_model(tok), args=args, train_dataset=load(mixed), processing_class=tok
        )


def test_split_modality_of_a_single_modality_writes_one_file(
    text_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "only.jsonl"
    n = export_sft([text_run], out, split_modality=True)
    text_path, vision_path = modality_paths(out)
    assert len(read_jsonl(text_path)) == n and not vision_path.exists()


def test_per_turn_rows_are_prefixes(text_run: Path) -> None:
    records = list(RunDir(text_run).episodes(resolve_images=True))
    whole = sft_rows(records)
    turns = sft_rows(records, per_turn=True)
    n_assistant = sum(1 for r in whole for m in r["messages"] if m["role"] == "assistant")
    assert len(turns) == n_assistant
    by_episode = {r["episode_id"]: r["messages"] for r in whole}
    for row in turns:
        full = by_episode[row["episode_id"]]
        i = len(row["prompt"])
        assert row["prompt"] == full[:i] and row["completion"] == [full[i]]
        assert row["completion"][0]["role"] == "assistant"
        assert "messages" not in row


def test_vision_rows_follow_trl_vlm_layout(
    vision_run: Path, text_run: Path, tmp_path: Path
) -> None:
    from datasets import Image, List
    from PIL import Image as PILImage
    from trl.data_utils import prepare_multimodal_messages

    out = tmp_path / "vlm.jsonl"
    export_sft([vision_run, text_run], out)
    rows = read_jsonl(out)
    assert all("images" in r for r in rows)
    vision = [r for r in rows if r["task"].startswith("tsp_vision")]
    assert vision and all(r["images"] for r in vision)
    for r in rows:
        placeholders = sum(
            1
            for m in r["messages"]
            if isinstance(m["content"], list)
            for p in m["content"]
            if p["type"] == "image"
        )
        assert placeholders == len(r["images"])
        for p in r["images"]:
            assert Path(p).is_absolute() and Path(p).parent == images_dir_for(out).resolve()
            with PILImage.open(p) as im:
                assert im.format == "PNG"
    ds = load(out).cast_column("images", List(Image()))
    for ex in ds:
        filled = prepare_multimodal_messages(ex["messages"], images=ex["images"])
        got = [
            p["image"]
            for m in filled
            if m["role"] != "tool"
            for p in m["content"]
            if p["type"] == "image"
        ]
        assert len(got) == len(ex["images"])


def test_no_images_keeps_plain_string_contents(vision_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "noimg.jsonl"
    export_sft([vision_run], out, images=False)
    rows = read_jsonl(out)
    assert all("images" not in r for r in rows)
    assert all(isinstance(m["content"], str) for r in rows for m in r["messages"])
    assert any("[image omitted" in m["content"] for r in rows for m in r["messages"])
    assert not images_dir_for(out).exists()


def test_text_tool_format_is_what_the_local_agent_sees(text_run: Path, vision_run: Path) -> None:
    records = list(RunDir(text_run).episodes(resolve_images=True)) + list(
        RunDir(vision_run).episodes(resolve_images=True)
    )
    rows = sft_rows(records, tool_format="text")
    template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    tok = tiny_tokenizer(template)
    agent = LocalAgent()
    agent._loaded = (None, tok)  # render prompts without loading a model
    checked = 0
    for record, row in zip(records, rows, strict=True):
        assert row["tools"] is None and "images" not in row
        msgs = row["messages"]
        assert all(set(m) == {"role", "content"} and isinstance(m["content"], str) for m in msgs)
        assert "<tools>" in msgs[0]["content"]
        for i, m in enumerate(msgs):
            if m["role"] != "assistant":
                continue
            seen = agent.render_prompt(record.messages[:i], record.tools)
            assert (
                tok.apply_chat_template(msgs[:i], tokenize=False, add_generation_prompt=True)
                == seen
            )
            if record.messages[i].tool_calls:
                assert "<tool_call>" in m["content"]
            checked += 1
    assert checked > 10
    assert any(
        "<tool_response>" in m["content"]
        for r in rows
        for m in r["messages"]
        if m["role"] == "user"
    )


@pytest.mark.slow
def test_text_rows_render_with_the_bundled_smollm2_template(text_run: Path) -> None:
    """The real SmolLM2 tokenizer (its template has no tool support) renders text rows."""
    pytest.importorskip("gguf")
    from agentharness.agents.base import AgentError
    from agentharness.agents.local import bundled_model_path

    try:
        directory, gguf = bundled_model_path()
    except AgentError as e:
        pytest.skip(str(e))
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(directory), gguf_file=gguf)
    records = list(RunDir(text_run).episodes())[:3]
    agent = LocalAgent()
    agent._loaded = (None, tok)
    for record, row in zip(records, sft_rows(records, tool_format="text"), strict=True):
        msgs = row["messages"]
        text = tok.apply_chat_template(msgs, tokenize=False)
        assert "<tool_call>" in text and "<tools>" in text
        last = max(i for i, m in enumerate(msgs) if m["role"] == "assistant")
        assert tok.apply_chat_template(msgs[:last], tokenize=False, add_generation_prompt=True) == (
            agent.render_prompt(record.messages[:last], record.tools)
        )


def test_text_written_calls_become_tool_responses(text_run: Path) -> None:
    record = next(iter(RunDir(text_run).episodes()))
    prompt = [m for m in record.messages if m.role in ("system", "user")][:2]
    messages = [
        *prompt,
        assistant('<tool_call>{"name": "look", "arguments": {}}</tool_call>'),
        tool_message("call_1_0", "look", "You see a lamp."),
        assistant(tool_calls=[ToolCall.make("n1", "look", "{}")]),
        tool_message("n1", "look", "Still a lamp."),
        user("[1 image(s) returned by the tool call(s) above]"),
    ]
    (row,) = sft_rows([record.model_copy(update={"messages": messages})])
    msgs = row["messages"]
    assert msgs[2] == {"role": "assistant", "content": messages[2].text}
    assert msgs[3] == {
        "role": "user",
        "content": "<tool_response>\nYou see a lamp.\n</tool_response>",
    }
    assert msgs[4]["content"] == "" and msgs[4]["tool_calls"][0]["function"]["arguments"] == {}
    assert msgs[5] == {
        "role": "tool",
        "tool_call_id": "n1",
        "name": "look",
        "content": "Still a lamp.",
    }


def test_export_is_deterministic(text_run: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    export_sft([text_run], a, per_turn=True)
    export_sft([text_run], b, per_turn=True)
    assert a.read_bytes() == b.read_bytes()
