"""RL export: prompts with everything the reward needs, for verl and TRL; GRPO groups.

Prompts come from the instances of run directories (one row per distinct instance, in
order of first appearance) or from an instances file. The reward is recomputed by
re-running the episode, so every row carries the serialized :class:`~agentharness.core.instance.Instance`
(``Instance.model_validate_json(...)`` restores it).

**verl** (``format="verl"``): a parquet file in the layout of verl's multi-turn examples
(``examples/data_preprocess/gsm8k_multiturn_w_tool.py``), one row per instance:

=================  ==========================================================================
column             value
=================  ==========================================================================
data_source        ``"agentharness/<task id>"`` (verl reports validation metrics per source)
prompt             list<struct<role: string, content: string>>: the opening messages; each
                   image becomes ``<image>`` in the text (verl's multimodal convention)
ability            ``"agent"``
reward_model       struct<style: ``"rule"``, ground_truth: the Instance as a JSON string>
extra_info         struct<split, index: int64, task, instance_id, need_tools_kwargs: true,
                   tools_kwargs, interaction_kwargs>
images             (only when some prompt has images) list<struct<bytes: binary, path: string>>,
                   in ``<image>`` order, the storage of ``datasets.Image``
=================  ==========================================================================

``tools_kwargs`` has one entry per tool in the tool config written beside the parquet,
``{"create_kwargs": {"instance": <Instance JSON>, "max_turns": ...}}`` for the row's own task's
tools and ``{"create_kwargs": {"instance": null, "max_turns": null}}`` for the tools of other
tasks in the same file:
every row has the same keys, so parquet stores it as one struct without null entries (verl
reads ``tools_kwargs[name]["create_kwargs"]`` for each call), and a tool whose ``instance``
is null is not part of that row's task. ``tool_selection`` names the row's own task's tools:
verl's ``ToolAgentLoop`` (>= 0.9) shows and parses only those for the prompt, so a file mixing
tasks never offers one task's tools to another's prompt. ``interaction_kwargs`` is ``{"name": "agentharness",
"instance": <Instance JSON>, "max_turns": ...}``.

``max_turns`` is the turn budget the row's episode plays under (``task_turns``, e.g. the
held-out budget the evaluation uses; ``null``: the task's default); the tool, the interaction
and the reward function (:mod:`agentharness.train.verl`) end the episode there, as
``bootcamp eval --max-turns`` and ``train grpo --task-budget`` do.

The tool config (``<out stem>.tools.yaml``) and interaction config
(``<out stem>.interaction.yaml``, read by verl <= 0.7 only) are written next to the parquet;
see :mod:`agentharness.export.verl`.

Vision rows need a working ``qwen-vl-utils`` (and a torchvision built for the installed torch)
wherever verl reads them: without it verl's ``RLHFDataset`` catches the import error while
measuring prompt lengths and drops every image row, printing only "skipping". The ``verl``
extra installs qwen-vl-utils, and the export warns, naming the error, when it cannot be
imported here.

**TRL** (``format="trl"``): JSON Lines for ``datasets.load_dataset("json", ...)``, one row per
instance::

    {"prompt": [OpenAI chat messages], "instance": "<Instance JSON>", "task": "thermal-v1",
     "environment": "thermal-v1", "instance_id": "...", "difficulty": "easy", "seed": 3,
     "max_turns": null}

plus, when some prompt has images, ``"images": [paths]`` with ``{"type": "image"}``
placeholders in the message contents (TRL's VLM layout; files under ``<out stem>_images/``).
The trainer builds the environment from ``instance`` (``agentharness.episode_for``, under
``max_turns`` as in the verl rows), so tools are not repeated in the rows; ``environment`` is
the column TRL's ``GRPOTrainer`` reads to pick each row's environment when given several
(:func:`agentharness.train.trl.environment_factory`).

**GRPO groups** (:func:`grpo_groups`): the rollouts of one instance by one agent form a
group; advantages are ``(r - mean) / (std + eps)`` with the sample standard deviation
(``ddof=1``, as TRL and verl compute it). A group whose rewards are all equal carries no
learning signal: it is flagged ``"degenerate": true`` and its advantages are 0.
"""

from __future__ import annotations

import importlib
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentharness.core.instance import Instance
from agentharness.core.messages import ImagePart, Message, TextPart
from agentharness.core.registry import positive_turns, split_task_id, value_for_task
from agentharness.export import verl as verl_config
from agentharness.export.common import (
    ExportError,
    ImageStore,
    check_versions,
    image_ref,
    prompt_messages,
    write_jsonl,
)
from agentharness.store.reader import load_runs
from agentharness.store.schema import EpisodeRecord

RLFormat = Literal["verl", "trl"]
RL_FORMATS: tuple[str, ...] = ("verl", "trl")
VERL_IMAGE_TOKEN = "<image>"


@dataclass(frozen=True)
class RLItem:
    """One prompt to train on: the instance, its opening messages and its tool schemas."""

    instance: Instance
    prompt: list[Message]
    tools: list[dict[str, Any]]


def items_from_records(records: Sequence[EpisodeRecord]) -> list[RLItem]:
    """One item per distinct instance, in order of first appearance (images must be inline)."""
    seen: set[str] = set()
    items: list[RLItem] = []
    for r in records:
        key = r.instance.instance_id
        if key in seen:
            continue
        seen.add(key)
        items.append(RLItem(instance=r.instance, prompt=prompt_messages(r), tools=r.tools))
    return items


def items_from_instances(instances: Sequence[Instance]) -> list[RLItem]:
    """Items for stored instances, prompts rendered by their (registered) tasks."""
    from agentharness.core.registry import UnknownTaskError, get_task

    items: list[RLItem] = []
    seen: set[str] = set()
    for inst in instances:
        if inst.instance_id in seen:
            continue
        seen.add(inst.instance_id)
        try:
            spec = get_task(inst.task)
        except UnknownTaskError as e:
            raise ExportError(str(e)) from e
        try:
            prompt = list(spec.generator.prompt(inst))
        except Exception as e:  # data the task cannot read: report it, export the rest
            from agentharness.rollout.runner import describe_error

            warnings.warn(
                f"skipped instance {inst.instance_id}: its prompt cannot be made "
                f"({describe_error(e)})",
                stacklevel=2,
            )
            continue
        items.append(RLItem(instance=inst, prompt=prompt, tools=spec.world.tool_schemas()))
    if instances and not items:
        raise ExportError("no instance could be exported; see the warnings above")
    return items


def turns_by_instance(
    items: Sequence[RLItem], task_turns: Mapping[str, int] | None
) -> dict[str, int | None]:
    """Each item's turn budget from ``task_turns`` (keyed by versioned task id or bare name;
    ``None``: the task's default). A budget for a task no item plays is an error, as is one
    naming another version of a played task (its rows would silently keep the default)."""
    task_turns = dict(task_turns or {})
    for task, turns in task_turns.items():
        try:
            positive_turns(turns)
        except ValueError as e:
            raise ExportError(f"the turn budget of {task}: {e}") from e
    played = {it.instance.task for it in items}
    for task in task_turns:
        if task in played or any(split_task_id(p)[0] == task for p in played):
            continue
        name = split_task_id(task)[0]
        versions = sorted(p for p in played if split_task_id(p)[0] == name)
        hint = (
            f"the prompts play {', '.join(versions)}; name that version (or the bare name {name})"
            if versions
            else f"the prompts play {', '.join(sorted(played))}"
        )
        raise ExportError(f"a turn budget is given for {task}, which no prompt plays: {hint}")
    return {it.instance.instance_id: value_for_task(task_turns, it.instance.task) for it in items}


# -- verl -----------------------------------------------------------------------------


def _verl_prompt(messages: Sequence[Message]) -> tuple[list[dict[str, str]], list[bytes]]:
    out: list[dict[str, str]] = []
    images: list[bytes] = []
    for m in messages:
        if isinstance(m.content, list):
            pieces = []
            for p in m.content:
                if isinstance(p, TextPart):
                    pieces.append(p.text)
                elif isinstance(p, ImagePart):
                    png = p.png_bytes()
                    if png is None:
                        raise ExportError(
                            "a prompt image is not inline; read runs with resolve_images=True"
                        )
                    pieces.append(VERL_IMAGE_TOKEN)
                    images.append(png)
            text = "\n".join(pieces)
        else:
            text = m.content or ""
        out.append({"role": m.role, "content": text})
    return out, images


def verl_rows(
    items: Sequence[RLItem], *, split: str = "train", task_turns: Mapping[str, int] | None = None
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """verl rows (see the module docstring) and the tools they use (for the tool config)."""
    tools = verl_config.collect_tools((it.instance.task, it.tools) for it in items)
    turns_of = turns_by_instance(items, task_turns)
    rows: list[dict[str, Any]] = []
    any_images = False
    for index, it in enumerate(items):
        instance_json = it.instance.model_dump_json()
        own_names = [str(t.get("function", {}).get("name")) for t in it.tools]
        own = set(own_names)
        turns = turns_of[it.instance.instance_id]
        prompt, images = _verl_prompt(it.prompt)
        any_images = any_images or bool(images)
        rows.append(
            {
                "data_source": f"agentharness/{it.instance.task}",
                "prompt": prompt,
                "ability": "agent",
                "reward_model": {"style": "rule", "ground_truth": instance_json},
                "extra_info": {
                    "split": split,
                    "index": index,
                    "task": it.instance.task,
                    "instance_id": it.instance.instance_id,
                    "need_tools_kwargs": True,
                    "tool_selection": own_names,
                    "tools_kwargs": {
                        name: {
                            "create_kwargs": {
                                "instance": instance_json if name in own else None,
                                "max_turns": turns if name in own else None,
                            }
                        }
                        for name in tools
                    },
                    "interaction_kwargs": {
                        "name": verl_config.INTERACTION_NAME,
                        "instance": instance_json,
                        "max_turns": turns,
                    },
                },
                "images": [{"bytes": png, "path": None} for png in images],
            }
        )
    if not any_images:
        for row in rows:
            del row["images"]
    return rows, tools


def verl_schema(tool_names: Sequence[str], with_images: bool) -> Any:
    """The explicit Arrow schema of the verl parquet (so no type depends on inference)."""
    import pyarrow as pa

    instance_and_turns = [pa.field("instance", pa.string()), pa.field("max_turns", pa.int64())]
    kwargs_type = pa.struct([pa.field("create_kwargs", pa.struct(instance_and_turns))])
    extra = pa.struct(
        [
            pa.field("split", pa.string()),
            pa.field("index", pa.int64()),
            pa.field("task", pa.string()),
            pa.field("instance_id", pa.string()),
            pa.field("need_tools_kwargs", pa.bool_()),
            pa.field("tool_selection", pa.list_(pa.string())),
            pa.field("tools_kwargs", pa.struct([pa.field(n, kwargs_type) for n in tool_names])),
            pa.field(
                "interaction_kwargs",
                pa.struct([pa.field("name", pa.string()), *instance_and_turns]),
            ),
        ]
    )
    fields = [
        pa.field("data_source", pa.string()),
        pa.field(
            "prompt",
            pa.list_(pa.struct([pa.field("role", pa.string()), pa.field("content", pa.string())])),
        ),
        pa.field("ability", pa.string()),
        pa.field(
            "reward_model",
            pa.struct([pa.field("style", pa.string()), pa.field("ground_truth", pa.string())]),
        ),
        pa.field("extra_info", extra),
    ]
    if with_images:
        fields.append(
            pa.field(
                "images",
                pa.list_(
                    pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])
                ),
            )
        )
    return pa.schema(fields)


def vision_support_problem() -> str | None:
    """Why verl could not read image rows in this environment (``None`` when it can).

    verl imports ``qwen_vl_utils`` (which imports torchvision) to measure image prompts, and
    drops the row, printing only "skipping", when that fails.
    """
    try:
        importlib.import_module("qwen_vl_utils")
    except Exception as e:  # ImportError, or torchvision's own errors against a foreign torch
        return f"{type(e).__name__}: {e}"
    return None


def write_verl(
    items: Sequence[RLItem],
    out: Path,
    *,
    split: str = "train",
    task_turns: Mapping[str, int] | None = None,
) -> int:
    """Write the verl parquet and its tool/interaction YAML next to it; returns rows written."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ExportError("the verl export needs pyarrow: pip install 'agentharness[data]'") from e
    rows, tools = verl_rows(items, split=split, task_turns=task_turns)
    with_images = bool(rows) and "images" in rows[0]
    problem = vision_support_problem() if with_images else None
    if problem is not None:
        warnings.warn(
            f"the export has image rows, and verl's RLHFDataset silently drops image rows when "
            f"qwen-vl-utils cannot be imported (here: {problem}); where verl runs, install "
            "'agentharness[verl]' and a torchvision built for its torch",
            UserWarning,
            stacklevel=2,
        )
    schema = verl_schema(list(tools), with_images=with_images)
    table = pa.Table.from_pylist(rows, schema=schema)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    verl_config.write_configs(tools, out)
    return len(rows)


# -- TRL ------------------------------------------------------------------------------


def trl_rows(
    items: Sequence[RLItem],
    *,
    image_store: ImageStore | None = None,
    task_turns: Mapping[str, int] | None = None,
) -> list[dict[str, Any]]:
    """TRL prompt rows (see the module docstring)."""
    turns_of = turns_by_instance(items, task_turns)
    rows: list[dict[str, Any]] = []
    for it in items:
        prompt: list[dict[str, Any]] = []
        refs: list[str] = []
        for m in it.prompt:
            if isinstance(m.content, list) and m.images:
                parts: list[dict[str, Any]] = []
                for p in m.content:
                    if isinstance(p, TextPart):
                        parts.append({"type": "text", "text": p.text})
                    else:
                        parts.append({"type": "image"})
                        refs.append(image_ref(p, image_store))
                prompt.append({"role": m.role, "content": parts})
            else:
                prompt.append({"role": m.role, "content": m.text})
        inst = it.instance
        rows.append(
            {
                "prompt": prompt,
                "instance": inst.model_dump_json(),
                "task": inst.task,
                "environment": inst.task,
                "instance_id": inst.instance_id,
                "difficulty": inst.difficulty,
                "seed": inst.seed,
                "max_turns": turns_of[inst.instance_id],
                "images": refs,
            }
        )
    if not any(row["images"] for row in rows):
        for row in rows:
            del row["images"]
    return rows


# -- entry point ----------------------------------------------------------------------


def export_rl(
    run_dirs: Sequence[Path] | None,
    out: Path,
    *,
    instances: Sequence[Instance] | None = None,
    format: RLFormat = "verl",
    split: str = "train",
    allow_mixed_versions: bool = False,
    task_turns: Mapping[str, int] | None = None,
) -> int:
    """Write RL prompts from ``run_dirs`` or ``instances`` (exactly one) to ``out``; returns rows.

    ``verl`` writes parquet plus ``<stem>.tools.yaml`` and ``<stem>.interaction.yaml``;
    ``trl`` writes JSONL (images, if any, under ``<stem>_images/``). ``task_turns`` gives
    tasks (versioned id or bare name) the turn budget their rows' episodes play under.
    """
    if format not in RL_FORMATS:
        raise ExportError(f"RL format must be one of {', '.join(RL_FORMATS)}, got {format!r}")
    if bool(run_dirs) == (instances is not None):
        raise ExportError("give run directories or an instances file, not both and not neither")
    if instances is not None:
        if not instances:
            raise ExportError("the instances file holds no instances")
        items = items_from_instances(instances)
    else:
        records = load_runs(run_dirs or [], resolve_images=True).emit_warnings().records
        items = items_from_records(records)
    check_versions((it.instance.task for it in items), allow_mixed=allow_mixed_versions)
    if format == "verl":
        return write_verl(items, out, split=split, task_turns=task_turns)
    from agentharness.export.sft import images_dir_for

    rows = trl_rows(items, image_store=ImageStore(images_dir_for(out)), task_turns=task_turns)
    return write_jsonl(rows, out)


# -- GRPO groups ----------------------------------------------------------------------


def group_advantages(
    rewards: Sequence[float], eps: float = 1e-6
) -> tuple[float, float, list[float], bool]:
    """(mean, std, advantages, degenerate) of one group's rewards.

    ``std`` is the sample standard deviation (``ddof=1``; 0 for a single reward). A group
    whose rewards are all equal is degenerate: its advantages are exactly 0.
    """
    n = len(rewards)
    if n == 0:
        raise ValueError("a group needs at least one reward")
    mean = math.fsum(rewards) / n
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / (n - 1)) if n > 1 else 0.0
    degenerate = max(rewards) - min(rewards) <= 1e-12
    if degenerate:
        return mean, 0.0, [0.0] * n, True
    return mean, std, [(r - mean) / (std + eps) for r in rewards], False


def grpo_groups(
    records: Sequence[EpisodeRecord], *, k: int | None = None, eps: float = 1e-6
) -> list[dict[str, Any]]:
    """GRPO groups: the rollouts of each (instance, agent), with rewards and advantages.

    With ``k``, only groups of exactly ``k`` rollouts are kept (others are skipped with a
    warning). Groups are in order of first appearance, rollouts sorted by sample index.
    """
    if k is not None and k < 1:
        raise ExportError(f"k must be at least 1, got {k}")
    grouped: dict[tuple[str, str], list[EpisodeRecord]] = {}
    for r in records:
        grouped.setdefault((r.instance.instance_id, r.agent), []).append(r)
    rows: list[dict[str, Any]] = []
    wrong_size = 0
    for (instance_id, agent), recs in grouped.items():
        recs = sorted(recs, key=lambda r: (r.sample, r.episode_id))
        if k is not None and len(recs) != k:
            wrong_size += 1
            continue
        rewards = [r.reward.total for r in recs]
        mean, std, advantages, degenerate = group_advantages(rewards, eps)
        rows.append(
            {
                "task": recs[0].task,
                "instance_id": instance_id,
                "agent": agent,
                "instance": recs[0].instance.model_dump_json(),
                "n": len(recs),
                "episode_ids": [r.episode_id for r in recs],
                "samples": [r.sample for r in recs],
                "rewards": rewards,
                "successes": [r.reward.success for r in recs],
                "mean": mean,
                "std": std,
                "advantages": advantages,
                "degenerate": degenerate,
            }
        )
    if wrong_size:
        warnings.warn(
            f"skipped {wrong_size} group(s) that do not have exactly k={k} rollouts",
            UserWarning,
            stacklevel=2,
        )
    return rows


def export_groups(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    k: int | None = None,
    eps: float = 1e-6,
    allow_mixed_versions: bool = False,
) -> int:
    """Write the GRPO groups of ``run_dirs`` as JSONL; returns the number of groups."""
    records = load_runs(run_dirs).emit_warnings().records
    check_versions((r.task for r in records), allow_mixed=allow_mixed_versions)
    rows = grpo_groups(records, k=k, eps=eps)
    if not rows:
        raise ExportError(
            f"no group has exactly k={k} rollouts; run `bootcamp eval -k {k}` or drop --k"
            if k is not None
            else "no groups found"
        )
    return write_jsonl(rows, out)
