"""The closed loop: evaluate, mine, synthesize, teacher rollouts, filter, export, train, re-evaluate.

``run_loop(config, out)`` drives every stage of every round; each stage writes into its
own place under ``out``::

    out/loop.json                  the configuration (a resume must match it)
    out/heldout.jsonl              the fixed held-out set, generated once (seeded)
    out/round_1/heldout_before/    student on the held-out set        (run directory)
               mine.json           failure clusters of that run
               synth.jsonl         instances synthesized around them (expert-validated)
               teacher/            teacher on the synthesized set     (run directory)
               filtered/           the teacher episodes worth learning from (run directory)
               sft.jsonl           SFT data exported from filtered/
               train/              trainer output (train/final is the new student)
               heldout_after/      the (trained) student on the same held-out set
               compare.json        heldout_after vs heldout_before, per task, with CIs
               <stage>.done        completion marker, written last
    out/summary.json               headline numbers per round

Round k > 1 starts from round k-1's ``heldout_after`` (the current student), so it has no
``heldout_before`` of its own. A stage whose marker exists is skipped on a re-run; an
unfinished evaluation resumes episode by episode (the runner skips finished episode
ids); file outputs are written to a temporary name and renamed, so a crash never leaves
half a file behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

import agentharness
from agentharness.agents import Agent, make_agent
from agentharness.core.instance import Instance
from agentharness.core.registry import UnknownTaskError, resolve_tasks
from agentharness.core.task import TaskConfigError
from agentharness.loop.checks import LoopInputError
from agentharness.loop.compare import compare
from agentharness.loop.filter import FilterCriteria, FilterSummary, filter_records, write_filtered
from agentharness.loop.mine import mine
from agentharness.loop.results import (
    CompareResult,
    EvalResult,
    ExportResult,
    LoopSummary,
    MineResult,
    RoundResult,
    RoundSummary,
    SynthResult,
    TrainResult,
)
from agentharness.loop.synthesize import synthesize
from agentharness.store.instances import read_instances, write_instances
from agentharness.store.reader import load_runs
from agentharness.store.run import RunDir, atomic_write_text
from agentharness.store.schema import EpisodeRecord

STAGES = (
    "heldout_before",
    "mine",
    "synth",
    "teacher",
    "filter",
    "export",
    "train",
    "heldout_after",
    "compare",
)
TRAINERS = ("none", "sft", "grpo")
# Fields that may change between a run and its resume without changing any result.
RUNTIME_FIELDS = frozenset({"rounds", "concurrency", "backend", "ray_address", "ray_workers"})
R = TypeVar("R", bound=BaseModel)


class LoopConfig(BaseModel):
    """Everything the loop's results depend on (plus ``rounds`` and ``concurrency``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    student: str = Field(description="agent spec, as in `bootcamp eval --agent`")
    student_model: str | None = None
    student_base_url: str | None = None
    teacher: str = "expert"
    teacher_model: str | None = None
    teacher_base_url: str | None = None
    tasks: str = "all"
    heldout_n: int = Field(10, ge=1, description="held-out instances per task and difficulty")
    difficulty: str = Field("medium", description="one difficulty or a comma-separated list")
    seed: int = Field(0, ge=0)
    eval_k: int = Field(1, ge=1, description="student samples per held-out instance")
    synth_n: int = Field(20, ge=0, description="instances to synthesize per round")
    teacher_k: int = Field(1, ge=1, description="teacher samples per synthesized instance")
    min_reward: float | None = Field(None, ge=0.0, le=1.0)
    success_only: bool = True
    max_turns: int | None = Field(None, ge=1, description="filter: longest kept episode")
    max_tokens: int | None = Field(None, ge=1, description="filter: longest kept conversation")
    allow_tool_errors: bool = False
    trainer: Literal["none", "sft", "grpo"] = "none"
    train_max_steps: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0.0)
    agent_seed: int = Field(0, ge=0)
    rounds: int = Field(1, ge=1)
    concurrency: int = Field(8, ge=1)
    # Where rollouts run; the same episodes either way (rollout/ray_backend.py).
    backend: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    ray_workers: int = Field(2, ge=1)

    def identity(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude=set(RUNTIME_FIELDS))


@dataclass(frozen=True)
class AgentOptions:
    model: str | None
    base_url: str | None
    seed: int
    concurrency: int
    sampling: dict[str, Any]


AgentFactory = Callable[[str, AgentOptions], Agent]


def default_agent_factory(kind: str, opts: AgentOptions) -> Agent:
    """``make_agent`` with the loop's options."""
    return make_agent(
        kind,
        model=opts.model,
        base_url=opts.base_url,
        concurrency=opts.concurrency,
        seed=opts.seed,
        sampling=opts.sampling,
    )


@dataclass
class LoopHooks:
    """Observation points (used by tests to interrupt the loop at precise places)."""

    stage_started: Callable[[int, str], None] | None = None
    stage_written: Callable[[int, str], None] | None = None  # outputs done, marker not yet
    episode_done: Callable[[int, str, EpisodeRecord], None] | None = None


def _records(run: Path, *, resolve_images: bool = False) -> list[EpisodeRecord]:
    """The episodes of a run the loop made itself (it may hold none)."""
    return load_runs([run], resolve_images=resolve_images, allow_empty=True).records


class Loop:
    """One loop directory; :meth:`run` does (or resumes) every round."""

    def __init__(
        self,
        config: LoopConfig,
        out: Path,
        *,
        hooks: LoopHooks | None = None,
        agent_factory: AgentFactory = default_agent_factory,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.cfg = config
        self.out = Path(out)
        self.hooks = hooks or LoopHooks()
        self.agent_factory = agent_factory
        self.log = log or (lambda msg: print(msg, file=sys.stderr))

    # -- set-up -----------------------------------------------------------------------
    def preflight(self) -> None:
        """Check the configuration before any work, with messages that say how to fix it."""
        cfg = self.cfg
        if cfg.trainer != "none" and cfg.student != "local":
            raise LoopInputError(
                f"--trainer {cfg.trainer} trains a local transformers model and re-evaluates it as "
                f"`--agent local --model <round>/train/final`, so the student must be `local` "
                f"(got --student {cfg.student}). Use --student local [--student-model PATH], "
                "or --trainer none."
            )
        if cfg.trainer != "none":
            self.trainer()  # fail now, not after a long held-out evaluation
        try:
            specs = resolve_tasks(cfg.tasks)
            for spec in specs:
                for d in self.difficulties:
                    spec.make_config(d)
        except (UnknownTaskError, TaskConfigError) as e:
            raise LoopInputError(str(e)) from e
        for kind, opts in (
            (cfg.student, self._opts(cfg.student_model, cfg.student_base_url)),
            (cfg.teacher, self._opts(cfg.teacher_model, cfg.teacher_base_url)),
        ):
            try:
                agent = self.agent_factory(kind, opts)
            except ValueError as e:
                raise LoopInputError(str(e)) from e
            asyncio.run(agent.aclose())
        if self.out.exists() and not self.out.is_dir():
            raise LoopInputError(f"{self.out} exists and is not a directory; choose another --out")
        saved = self.out / "loop.json"
        if saved.exists():
            before = json.loads(saved.read_text()).get("config", {})
            now = cfg.identity()
            diff = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
            if diff:
                listed = "; ".join(f"{k}: {before.get(k)!r} -> {now.get(k)!r}" for k in diff)
                raise LoopInputError(
                    f"{self.out} holds a loop started with other settings ({listed}). "
                    "Re-run with the same flags to resume it, or choose another --out."
                )
        elif self.out.exists() and any(self.out.iterdir()):
            raise LoopInputError(
                f"{self.out} is not empty and holds no loop.json; choose an empty or new --out"
            )

    @property
    def difficulties(self) -> list[str]:
        return [d.strip() for d in self.cfg.difficulty.split(",") if d.strip()]

    def _opts(self, model: str | None, base_url: str | None) -> AgentOptions:
        sampling: dict[str, Any] = {}
        if self.cfg.temperature is not None:
            sampling["temperature"] = self.cfg.temperature
        return AgentOptions(
            model=model,
            base_url=base_url,
            seed=self.cfg.agent_seed,
            concurrency=self.cfg.concurrency,
            sampling=sampling,
        )

    def heldout(self) -> list[Instance]:
        """The held-out set: ``heldout_n`` seeds per task and difficulty, made once."""
        path = self.out / "heldout.jsonl"
        if path.exists():
            return read_instances(path, allow_empty=True)
        instances = [
            spec.instance(s, d)
            for spec in resolve_tasks(self.cfg.tasks)
            for d in self.difficulties
            for s in range(self.cfg.seed, self.cfg.seed + self.cfg.heldout_n)
        ]
        write_instances(path, instances)
        return instances

    # -- running ----------------------------------------------------------------------
    def run(self) -> LoopSummary:
        """Do every round not yet done; returns the summary written to ``summary.json``."""
        self.preflight()
        self.out.mkdir(parents=True, exist_ok=True)
        saved = self.out / "loop.json"
        if not saved.exists():
            atomic_write_text(
                saved,
                json.dumps(
                    {"agentharness": agentharness.__version__, "config": self.cfg.identity()},
                    indent=2,
                ),
            )
        heldout = self.heldout()
        self.log(f"held-out set: {len(heldout)} instances ({self.out / 'heldout.jsonl'})")
        rounds = [self.run_round(k, heldout) for k in range(1, self.cfg.rounds + 1)]
        summary = LoopSummary(out=str(self.out), rounds=[RoundSummary.of(r) for r in rounds])
        atomic_write_text(self.out / "summary.json", summary.model_dump_json(indent=2))
        return summary

    def round_dir(self, k: int) -> Path:
        return self.out / f"round_{k}"

    def before_dir(self, k: int) -> Path:
        return (
            self.round_dir(1) / "heldout_before"
            if k == 1
            else self.round_dir(k - 1) / "heldout_after"
        )

    def student_at(self, k: int) -> tuple[str, str | None]:
        """(agent kind, model) of the student entering round ``k``."""
        kind, model = self.cfg.student, self.cfg.student_model
        for j in range(1, k):
            trained = self._done(j, "train", TrainResult)
            if trained is not None and trained.model:
                kind, model = "local", trained.model
        return kind, model

    def _done(self, k: int, name: str, result: type[R]) -> R | None:
        """The result of round ``k``'s stage ``name`` if it is done (from its marker)."""
        marker = self.round_dir(k) / f"{name}.done"
        if not marker.exists():
            return None
        return result.model_validate_json(marker.read_text())

    def _stage(self, k: int, name: str, result: type[R], work: Callable[[], R]) -> R:
        done = self._done(k, name, result)
        if done is not None:
            self.log(f"round {k} {name}: already done, skipped")
            return done
        self.round_dir(k).mkdir(parents=True, exist_ok=True)
        if self.hooks.stage_started:
            self.hooks.stage_started(k, name)
        info = work()
        if self.hooks.stage_written:
            self.hooks.stage_written(k, name)
        text = json.dumps({"stage": name, "round": k, **info.model_dump(mode="json")}, indent=2)
        atomic_write_text(self.round_dir(k) / f"{name}.done", text)
        self.log(f"round {k} {name}: {_short(info)}")
        # Return what the marker holds, so a fresh run and a resumed one see the same data.
        return result.model_validate_json(text)

    def run_round(self, k: int, heldout: list[Instance]) -> RoundResult:
        rd = self.round_dir(k)
        cfg = self.cfg
        kind, model = self.student_at(k)
        base_url = cfg.student_base_url if kind == cfg.student else None
        before_result = None
        if k == 1:
            before_result = self._stage(
                k,
                "heldout_before",
                EvalResult,
                lambda: self._eval(
                    k,
                    "heldout_before",
                    kind,
                    self._opts(model, base_url),
                    heldout,
                    rd / "heldout_before",
                    cfg.eval_k,
                ),
            )
        before = self.before_dir(k)
        mined = self._stage(k, "mine", MineResult, lambda: self._mine(before, rd / "mine.json"))
        synth = self._stage(k, "synth", SynthResult, lambda: self._synth(k, before, heldout))
        teacher = self._stage(
            k,
            "teacher",
            EvalResult,
            lambda: self._eval(
                k,
                "teacher",
                cfg.teacher,
                self._opts(cfg.teacher_model, cfg.teacher_base_url),
                read_instances(rd / "synth.jsonl", allow_empty=True),
                rd / "teacher",
                cfg.teacher_k,
            ),
        )
        kept = self._stage(k, "filter", FilterSummary, lambda: self._filter(rd))
        exported = self._stage(k, "export", ExportResult, lambda: self._export(rd))
        trained = self._stage(k, "train", TrainResult, lambda: self._train(k, model))
        after_kind, after_model = self.student_at(k + 1)
        after_url = cfg.student_base_url if after_kind == cfg.student else None
        after = self._stage(
            k,
            "heldout_after",
            EvalResult,
            lambda: self._eval(
                k,
                "heldout_after",
                after_kind,
                self._opts(after_model, after_url),
                heldout,
                rd / "heldout_after",
                cfg.eval_k,
            ),
        )
        compared = self._stage(k, "compare", CompareResult, lambda: self._compare(before, rd))
        return RoundResult(
            round=k,
            heldout_before=before_result,
            mine=mined,
            synth=synth,
            teacher=teacher,
            filter=kept,
            export=exported,
            train=trained,
            heldout_after=after,
            compare=compared,
        )

    # -- stages -----------------------------------------------------------------------
    def _eval(
        self,
        k: int,
        stage: str,
        kind: str,
        opts: AgentOptions,
        instances: list[Instance],
        out: Path,
        samples: int,
    ) -> EvalResult:
        from agentharness.rollout.runner import plan_instances, run

        agent = self.agent_factory(kind, opts)
        run_dir = RunDir(out)
        run_dir.create(
            {
                "command": "loop",
                "stage": stage,
                "round": k,
                "agent": agent.name,
                "tasks": sorted({i.task for i in instances}),
                "k": samples,
                "agentharness": agentharness.__version__,
            }
        )
        run_dir.episodes_path.touch()
        hook = self.hooks.episode_done

        def on_done(record: EpisodeRecord) -> None:
            if hook is not None:
                hook(k, stage, record)

        async def go() -> Any:
            items = plan_instances(instances, k=samples)
            try:
                if self.cfg.backend == "ray":
                    from agentharness.rollout.ray_backend import RayConfig, run_ray

                    workers = self.cfg.ray_workers
                    share = dataclasses.replace(opts, concurrency=-(-opts.concurrency // workers))
                    return await run_ray(
                        items,
                        functools.partial(self.agent_factory, kind, share),
                        run_dir,
                        ray_config=RayConfig(address=self.cfg.ray_address, workers=workers),
                        concurrency=self.cfg.concurrency,
                        on_done=on_done,
                    )
                return await run(
                    items, agent, run_dir, concurrency=self.cfg.concurrency, on_done=on_done
                )
            finally:
                await agent.aclose()

        result = asyncio.run(go())
        records = _records(out)
        n = len(records)
        return EvalResult(
            run=str(out),
            agent=agent.name,
            episodes=n,
            ran=result.ran,
            resumed_past=result.skipped,
            failed_to_generate=result.failed_to_generate,
            mean_reward=sum(r.reward.total for r in records) / n if n else None,
            success_rate=sum(r.reward.success for r in records) / n if n else None,
        )

    def _mine(self, before: Path, out: Path) -> MineResult:
        loaded = load_runs([before], allow_empty=True)
        report = mine(loaded.records, runs=[str(before)], warnings=loaded.warnings)
        atomic_write_text(out, report.model_dump_json(indent=2))
        if report.episodes and not report.failures:
            self.log(
                f"the student solved all {report.episodes} held-out episodes: no failure to learn "
                "from. Try a weaker student (e.g. noisy:0.5) or a harder --difficulty."
            )
        return MineResult(
            episodes=report.episodes, failures=report.failures, clusters=len(report.clusters)
        )

    def _synth(self, k: int, before: Path, heldout: list[Instance]) -> SynthResult:
        rd = self.round_dir(k)
        exclude = {i.instance_id for i in heldout}
        for j in range(1, k):
            earlier = self.round_dir(j) / "synth.jsonl"
            if earlier.exists():
                exclude |= {i.instance_id for i in read_instances(earlier, allow_empty=True)}
        records = _records(before)
        instances, report = synthesize(
            records,
            n=self.cfg.synth_n,
            seed=self.cfg.seed * 1000 + k,
            exclude=exclude,
            concurrency=self.cfg.concurrency,
        )
        write_instances(rd / "synth.jsonl", instances)
        return SynthResult(instances=len(instances), report=report)

    def _filter(self, rd: Path) -> FilterSummary:
        cfg = self.cfg
        criteria = FilterCriteria(
            min_reward=cfg.min_reward,
            success_only=cfg.success_only,
            max_turns=cfg.max_turns,
            max_tokens=cfg.max_tokens,
            allow_tool_errors=cfg.allow_tool_errors,
        )
        result = filter_records(_records(rd / "teacher", resolve_images=True), criteria)
        write_filtered(rd / "filtered", result, criteria, [rd / "teacher"])
        return result.summary()

    def _export(self, rd: Path) -> ExportResult:
        out = rd / "sft.jsonl"
        if not _records(rd / "filtered"):  # nothing kept: no rows (the exporter refuses empty runs)
            out.write_text("")
            return ExportResult(rows=0, file=str(out))
        try:
            from agentharness.export.common import ExportError
            from agentharness.export.sft import export_sft
        except ImportError as e:
            raise LoopInputError(
                "the export stage needs agentharness.export.sft.export_sft, which could not be "
                f"imported ({e}); install agentharness with its export module"
            ) from e
        # Written in place: the exporter puts images next to its output, and the stage
        # marker (written after this) is what says the file is complete.
        # A local student reads tools from its prompt and writes <tool_call> text, so it
        # learns from the same rendering it sees at inference.
        tool_format: Literal["native", "text"] = "text" if self.cfg.student == "local" else "native"
        try:
            rows = export_sft([rd / "filtered"], out, tool_format=tool_format)
        except ExportError as e:  # readable input the exporter cannot use
            raise LoopInputError(f"export of {rd / 'filtered'} failed: {e}") from e
        return ExportResult(rows=int(rows), file=str(out))

    def _train(self, k: int, model: str | None) -> TrainResult:
        cfg, rd = self.cfg, self.round_dir(k)
        if cfg.trainer == "none":
            return TrainResult(
                trainer="none",
                trained=False,
                reason="no --trainer (sft or grpo): the student is the same in every round",
            )
        out = rd / "train"
        data = rd / ("sft.jsonl" if cfg.trainer == "sft" else "synth.jsonl")
        if not data.read_text().strip():
            return TrainResult(trainer=cfg.trainer, trained=False, reason="no training data")
        self.trainer()(data=data, out=out, model=model, max_steps=cfg.train_max_steps)
        final = out / "final"
        if not final.exists():
            raise LoopInputError(
                f"the {cfg.trainer} trainer finished but wrote no model to {final}"
            )
        return TrainResult(trainer=cfg.trainer, trained=True, model=str(final), base=model)

    def trainer(self) -> Callable[..., Any]:
        """The configured trainer: ``train_sft`` (SFT rows) or ``train_grpo`` (instances).

        Both are called as ``fn(data=, out=, model=, max_steps=)`` and must leave the
        trained model in ``out/final``.
        """
        name = self.cfg.trainer
        try:
            module = importlib.import_module(f"agentharness.train.{name}")
            fn: Callable[..., Any] = getattr(module, f"train_{name}")
        except (ImportError, AttributeError) as e:
            raise LoopInputError(
                f"--trainer {name} needs agentharness.train.{name}.train_{name} and the 'train' "
                f"extra (pip install 'agentharness[train]'): {e}"
            ) from e
        return fn

    def _compare(self, before: Path, rd: Path) -> CompareResult:
        a, b = _records(before), _records(rd / "heldout_after")
        if not a or not b:
            atomic_write_text(rd / "compare.json", json.dumps({"note": "nothing to compare"}))
            return CompareResult(compared=False)
        report = compare(
            a, b, seed=self.cfg.seed, run_a=str(before), run_b=str(rd / "heldout_after")
        )
        atomic_write_text(rd / "compare.json", report.model_dump_json(indent=2))
        return CompareResult.of(report)


def _short(result: BaseModel) -> str:
    keys = (
        "episodes",
        "mean_reward",
        "failures",
        "clusters",
        "instances",
        "kept",
        "dropped",
        "rows",
        "trained",
        "reason",
        "delta",
        "verdict",
    )
    info = result.model_dump()
    parts = []
    for key in keys:
        if key in info and info[key] is not None:
            v = info[key]
            parts.append(f"{key}={v:.3f}" if isinstance(v, float) else f"{key}={v}")
    return ", ".join(parts) or "done"


def run_loop(
    config: LoopConfig,
    out: Path,
    *,
    hooks: LoopHooks | None = None,
    agent_factory: AgentFactory = default_agent_factory,
    log: Callable[[str], None] | None = None,
) -> LoopSummary:
    """Run (or resume) the loop in ``out``; see the module docstring."""
    return Loop(config, out, hooks=hooks, agent_factory=agent_factory, log=log).run()


__all__ = [
    "STAGES",
    "TRAINERS",
    "AgentFactory",
    "AgentOptions",
    "Loop",
    "LoopConfig",
    "LoopHooks",
    "LoopSummary",
    "default_agent_factory",
    "run_loop",
]
