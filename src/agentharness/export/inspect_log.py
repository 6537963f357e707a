"""inspect_ai log export: runs as an eval log that ``inspect view`` opens.

One log per export, built with inspect_ai's own models and written with its
``write_eval_log`` (``.eval``, its zipped format, or ``.json`` by the file's suffix):

* one **sample** per episode: ``id`` = the episode id, ``epoch`` = sample + 1, ``input`` =
  the opening messages, ``messages`` = the whole conversation, ``output`` = the last
  assistant message; images inline as ``data:`` URLs (the log stands alone);
* every assistant turn carries the tool calls that were **executed** for it (from the
  episode's tool-call records, so calls a model wrote as ``<tool_call>`` text show as calls
  too), and each tool result its ``function`` and, for a failed call, an ``error``;
  format errors and nudges are user messages with ``metadata.kind`` saying which;
* **scores**: ``reward`` (``Reward.total``; the breakdown — components with value, weight
  and detail, success, end reason — in its ``metadata``, the explanation as
  ``explanation``) and ``success`` (1.0 / 0.0), with mean metrics in the results;
* sample ``metadata``: task, difficulty, seed, instance id, agent, knobs, turns, tool errors,
  format errors, nudges, end reason; token usage per sample and in the stats.

``eval.task`` is the task id when the run has one task (else ``agentharness``), and
``eval.model`` is ``agentharness/<agent>``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentharness.core.messages import ImagePart, Message, TextPart
from agentharness.export.common import ExportError, check_versions
from agentharness.store.reader import load_runs
from agentharness.store.schema import EpisodeRecord
from agentharness.view.pages import message_kinds

LOG_SUFFIXES = (".eval", ".json")
HINT = "the inspect export needs inspect_ai: pip install 'agentharness[inspect]'"


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat()


def _content(m: Message) -> Any:
    from inspect_ai.model import ContentImage, ContentText

    if not isinstance(m.content, list):
        return m.content or ""
    parts: list[Any] = []
    for p in m.content:
        if isinstance(p, TextPart):
            parts.append(ContentText(text=p.text))
        elif isinstance(p, ImagePart):
            parts.append(ContentImage(image=p.image_url.url))
    return parts


def _messages(record: EpisodeRecord) -> list[Any]:
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
        ContentReasoning,
        ContentText,
    )
    from inspect_ai.tool import ToolCall, ToolCallError

    calls_by_turn: dict[int, list[Any]] = {}
    errors = {c.id for c in record.tool_calls if c.is_error}
    for c in record.tool_calls:
        calls_by_turn.setdefault(c.turn, []).append(
            ToolCall(id=c.id, function=c.name, arguments=c.arguments)
        )
    model = f"agentharness/{record.agent}"
    out: list[Any] = []
    turn = 0
    for m, kind in zip(record.messages, message_kinds(record.messages), strict=True):
        if m.role == "system":
            out.append(ChatMessageSystem(content=_content(m), source="input"))
        elif m.role == "assistant":
            turn += 1
            content = _content(m)
            if m.reasoning_content:
                text = [ContentText(text=content)] if isinstance(content, str) and content else []
                content = [ContentReasoning(reasoning=m.reasoning_content), *text]
            step = record.step_rewards[turn - 1] if turn <= len(record.step_rewards) else None
            out.append(
                ChatMessageAssistant(
                    content=content,
                    tool_calls=calls_by_turn.get(turn) or None,
                    model=model,
                    source="generate",
                    metadata={"turn": turn, "step_reward": step},
                )
            )
        elif m.role == "tool":
            error = (
                ToolCallError(type="unknown", message=m.text) if m.tool_call_id in errors else None
            )
            out.append(
                ChatMessageTool(
                    content=_content(m), tool_call_id=m.tool_call_id, function=m.name, error=error
                )
            )
        else:
            out.append(
                ChatMessageUser(
                    content=_content(m),
                    source="input" if kind == "prompt" else None,
                    metadata=None if kind == "prompt" else {"kind": kind},
                )
            )
    return out


def _sample(record: EpisodeRecord) -> Any:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.scorer import Score

    messages = _messages(record)
    n_input = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    r = record.reward
    usage = ModelUsage(
        input_tokens=record.usage.prompt_tokens,
        output_tokens=record.usage.completion_tokens,
        total_tokens=record.usage.total_tokens,
    )
    breakdown = {
        "success": r.success,
        "end_reason": record.end_reason,
        "components": [c.model_dump() for c in r.components],
    }
    model = f"agentharness/{record.agent}"
    return EvalSample(
        id=record.episode_id,
        epoch=record.sample + 1,
        input=messages[:n_input],
        target="",
        messages=messages,
        output=ModelOutput(
            model=model,
            choices=[
                ChatCompletionChoice(
                    message=last or ChatMessageAssistant(content=""), stop_reason="stop"
                )
            ],
            usage=usage,
        ),
        scores={
            "reward": Score(value=r.total, explanation=r.explanation, metadata=breakdown),
            "success": Score(value=1.0 if r.success else 0.0),
        },
        metadata={
            "task": record.task,
            "difficulty": record.difficulty,
            "seed": record.seed,
            "instance_id": record.instance.instance_id,
            "agent": record.agent,
            "knobs": record.instance.config,
            "turns": record.turns,
            "tool_errors": record.tool_errors,
            "format_errors": record.format_errors,
            "nudges": record.nudges,
            "end_reason": record.end_reason,
            "error": record.error,
        },
        model_usage={model: usage},
        total_time=record.timings.wall_s,
        working_time=record.timings.wall_s,
        error=None,
    )


def eval_log(records: Sequence[EpisodeRecord], *, name: str = "agentharness") -> Any:
    """An inspect_ai ``EvalLog`` of ``records`` (images must be inline)."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelUsage

    if not records:
        raise ExportError("no episodes to export")
    tasks = sorted({r.task for r in records})
    agents = sorted({r.agent for r in records})
    model = f"agentharness/{agents[0]}" if len(agents) == 1 else "agentharness/mixed"
    started = min(r.timings.started_at for r in records)
    ended = max(r.timings.started_at + r.timings.wall_s for r in records)
    samples = [_sample(r) for r in records]
    usage = ModelUsage()
    for r in records:
        usage.input_tokens += r.usage.prompt_tokens
        usage.output_tokens += r.usage.completion_tokens
        usage.total_tokens += r.usage.total_tokens

    def score(key: str, values: list[float]) -> Any:
        return EvalScore(
            name=key,
            scorer=key,
            scored_samples=len(values),
            metrics={"mean": EvalMetric(name="mean", value=statistics.fmean(values))},
        )

    return EvalLog(
        status="success",
        eval=EvalSpec(
            created=_iso(started),
            task=tasks[0] if len(tasks) == 1 else name,
            dataset=EvalDataset(name=name, samples=len(samples)),
            model=model,
            config=EvalConfig(),
            metadata={"tasks": tasks, "agents": agents, "source": "agentharness"},
        ),
        results=EvalResults(
            total_samples=len(samples),
            completed_samples=len(samples),
            scores=[
                score("reward", [r.reward.total for r in records]),
                score("success", [float(r.reward.success) for r in records]),
            ],
        ),
        stats=EvalStats(
            started_at=_iso(started), completed_at=_iso(ended), model_usage={model: usage}
        ),
        samples=samples,
    )


def export_inspect(
    run_dirs: Sequence[Path], out: Path, *, allow_mixed_versions: bool = False
) -> int:
    """Write the inspect_ai log of ``run_dirs`` to ``out`` (``.eval`` or ``.json``); returns samples."""
    if out.suffix not in LOG_SUFFIXES:
        raise ExportError(
            f"inspect logs end in .eval or .json (inspect view lists those); got {out.name}"
        )
    try:
        from inspect_ai.log import write_eval_log
    except ImportError as e:
        raise ExportError(f"{HINT} ({e})") from e
    records = load_runs(run_dirs, resolve_images=True).emit_warnings().records
    check_versions((r.task for r in records), allow_mixed=allow_mixed_versions)
    name = "+".join(Path(p).resolve().name for p in run_dirs)
    log = eval_log(records, name=name)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(out))
    return len(log.samples or [])
