"""Helpers of experiments/smollm2_sft_grpo.sh: the GRPO curriculum and the summary.

python experiments/summarize.py split INSTANCES.jsonl
    one file INSTANCES.<task>.jsonl per task of the instances file
python experiments/summarize.py curriculum PROBE_RUN... -o INSTANCES.jsonl
    the probed instances some sampled episodes solved and others did not (the groups GRPO
    can learn from), else those whose episodes scored differently, else those scored above
    zero at least once, else all of them
python experiments/summarize.py always-solved PROBE_RUN... -o INSTANCES.jsonl
    the probed instances every sampled episode solved: where more samples may show a rare
    failure (the script's PROBE_K_MAX samples them again)
python experiments/summarize.py summary WORKDIR -o RESULTS_DIR
    RESULTS_DIR/summary.json (stage means, paired-bootstrap changes on the held-out set,
    each with the instances that went up or down, solved or lost, and those whose greedy
    turns did not change at all), RESULTS_DIR/table.md, the reward and loss curves as PNG,
    and the training summaries
python experiments/summarize.py draws RESULTS_DIR... [--change grpo_vs_sft] [--target 0.05]
    one change over runs of a recipe that differ only in a seed (draws): each draw's delta
    and interval, whether it meets the target, and the mean and spread over draws
python experiments/summarize.py new-draw WORKDIR NEW_WORKDIR
    a copy of WORKDIR without its GRPO model and evaluation, for another GRPO draw on the
    same earlier stages (run the script on NEW_WORKDIR with another GRPO_SEED): the paths
    each run.json records (instances file, model) now name NEW_WORKDIR, so the evaluations
    resume instead of refusing a run that names other files

The held-out runs are WORKDIR/runs/<stage>/<task> (one run per task: each task has its own
turn budget). Changes come from :func:`agentharness.loop.compare.compare` over all tasks'
episodes at once: paired by instance, 2000 percentile-bootstrap resamples, seed 0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from agentharness.loop.compare import CompareReport, TaskComparison, compare
from agentharness.store.instances import read_instances
from agentharness.store.reader import load_runs
from agentharness.store.schema import EpisodeRecord

STAGES = ("untuned", "sft", "grpo")
CHANGES = (("sft_vs_untuned", "untuned", "sft"), ("grpo_vs_sft", "sft", "grpo"))
LABELS = {"untuned": "1. untuned", "sft": "2. + SFT", "grpo": "3. + SFT + GRPO"}


def stage_records(work: Path, stage: str) -> list[EpisodeRecord]:
    """The stage's episodes on the instances of WORKDIR/held_out.jsonl (a run may hold more
    when the held-out set was made smaller after it ran)."""
    runs = sorted(p for p in (work / "runs" / stage).glob("*") if (p / "episodes.jsonl").exists())
    if not runs:
        return []
    held_out = {i.instance_id for i in read_instances(work / "held_out.jsonl")}
    return [
        r for r in load_runs(runs, allow_empty=True).records if r.instance.instance_id in held_out
    ]


def per_task(records: list[EpisodeRecord]) -> dict[str, dict[str, Any]]:
    by: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        by[r.task].append(r)
    out: dict[str, dict[str, Any]] = {}
    for task, rs in sorted(by.items()):
        reasons: dict[str, int] = defaultdict(int)
        for r in rs:
            reasons[str(r.end_reason)] += 1
        out[task] = {
            "episodes": len(rs),
            "mean": statistics.fmean(r.reward.total for r in rs),
            "success": statistics.fmean(float(r.reward.success) for r in rs),
            "mean_turns": statistics.fmean(r.turns for r in rs),
            "end_reasons": dict(sorted(reasons.items())),
        }
    return out


def stage_entry(records: list[EpisodeRecord]) -> dict[str, Any]:
    tasks = per_task(records)
    return {
        "mean": statistics.fmean(r.reward.total for r in records),
        "success": statistics.fmean(float(r.reward.success) for r in records),
        "episodes": len(records),
        "instances": len({r.instance.instance_id for r in records}),
        "agents": sorted({r.agent for r in records}),
        "tasks": tasks,
    }


def moved(t: TaskComparison) -> dict[str, Any]:
    """Paired instance counts of one comparison: how many went up or down, solved or lost."""
    return {k: getattr(t, k) for k in ("wins", "losses", "solved_gained", "solved_lost")}


def model_turns(r: EpisodeRecord) -> list[tuple[str, list[tuple[str, str]]]]:
    """What the agent wrote in an episode: each turn's text and tool calls (no call ids)."""
    return [
        (m.text, [(c.function.name, c.function.arguments) for c in m.tool_calls or []])
        for m in r.messages
        if m.role == "assistant"
    ]


def unchanged(a: list[EpisodeRecord], b: list[EpisodeRecord]) -> dict[str, int]:
    """Per task: instances whose one episode in each stage has the same turns. Under greedy
    decoding, the later model behaves exactly as the earlier one there."""

    def one_each(records: list[EpisodeRecord]) -> dict[tuple[str, str], EpisodeRecord]:
        keyed: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
        for r in records:
            keyed[(r.task, r.instance.instance_id)].append(r)
        return {k: rs[0] for k, rs in keyed.items() if len(rs) == 1}

    ea, eb = one_each(a), one_each(b)
    out: dict[str, int] = defaultdict(int)
    for key in sorted(set(ea) & set(eb)):
        out[key[0]] += model_turns(ea[key]) == model_turns(eb[key])
    return dict(out)


def change_entry(report: CompareReport, same_turns: dict[str, int] | None = None) -> dict[str, Any]:
    overall = report.overall or report.tasks[0]
    same_turns = same_turns or {}
    return {
        "a_mean": overall.reward.a,
        "b_mean": overall.reward.b,
        "delta": overall.reward.delta,
        "ci": list(overall.reward.ci) if overall.reward.ci else None,
        "paired": overall.paired,
        "instances": overall.common_instances,
        "verdict": overall.verdict,
        "success_delta": overall.success.delta,
        **moved(overall),
        "unchanged": sum(same_turns.values()),
        "tasks": {
            t.task: {
                "delta": t.reward.delta,
                "ci": list(t.reward.ci) if t.reward.ci else None,
                "verdict": t.verdict,
                **moved(t),
                "unchanged": same_turns.get(t.task, 0),
            }
            for t in report.tasks
        },
    }


def plot_curves(work: Path, out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the `data` extra is not installed
        print("matplotlib is not installed: no plots")
        return []
    written = []
    sft = _train_summary(work / "models" / "sft")
    grpo = _train_summary(work / "models" / "grpo")
    if sft or grpo:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
        for ax, summ, name in ((axes[0], sft, "SFT"), (axes[1], grpo, "GRPO")):
            losses = (summ or {}).get("losses") or []
            ax.plot(range(1, len(losses) + 1), losses, marker=".")
            ax.set_xlabel("optimizer step")
            ax.set_ylabel("training loss")
            ax.set_title(f"{name} loss" + ("" if losses else " (not run)"))
            ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "loss_curves.png", dpi=100)
        plt.close(fig)
        written.append("loss_curves.png")
    rewards = (grpo or {}).get("mean_reward_per_step") or []
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(range(1, len(rewards) + 1), rewards, marker="o", label="GRPO step mean (training)")
    by_task: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for step, task, mean in group_rewards(work / "models" / "grpo" / "rollouts"):
        by_task[task].append((step + 1, mean))
    if len(by_task) > 1:  # which task each group played
        for i, (task, points) in enumerate(sorted(by_task.items())):
            xs, ys = zip(*points, strict=True)
            ax.scatter(xs, ys, marker="x", s=60, zorder=3, color=f"C{i + 2}", label=task)
    if len(rewards) >= 3:
        k = 3
        smooth = [statistics.fmean(rewards[max(0, i - k + 1) : i + 1]) for i in range(len(rewards))]
        ax.plot(range(1, len(rewards) + 1), smooth, label="moving mean of 3")
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("mean episode reward")
    ax.set_title("GRPO reward per step" + ("" if rewards else " (not run)"))
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "reward_curve.png", dpi=100)
    plt.close(fig)
    written.append("reward_curve.png")
    return written


def grpo_groups(rollouts: Path, agent: str = "grpo:step") -> list[dict[str, Any]]:
    """Every GRPO group of a ``train grpo`` rollouts log, in step order: its step, task,
    instance seed and the episodes' rewards (the episodes' agent is ``grpo:step<N>``; a group
    is one step's episodes on one instance). ``agent="grpo:flat:step"``: the flat groups
    that ``--resample-flat`` set aside instead."""
    if not (rollouts / "episodes.jsonl").exists():
        return []
    groups: dict[tuple[int, str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in load_runs([rollouts], allow_empty=True).records:
        if not r.agent.startswith(agent):
            continue
        step = int(r.agent.removeprefix(agent))
        groups[(step, r.task, r.instance.instance_id)].append(r)
    return [
        {
            "step": step,
            "task": task,
            "seed": rs[0].instance.seed,
            "rewards": [r.reward.total for r in sorted(rs, key=lambda r: r.sample)],
        }
        for (step, task, _), rs in sorted(groups.items())
    ]


def group_rewards(rollouts: Path) -> list[tuple[int, str, float]]:
    """``(step, task, mean reward)`` of every GRPO group (see :func:`grpo_groups`)."""
    return [(g["step"], g["task"], statistics.fmean(g["rewards"])) for g in grpo_groups(rollouts)]


def _train_summary(model_dir: Path) -> dict[str, Any] | None:
    path = model_dir / "train_summary.json"
    return json.loads(path.read_text()) if path.exists() else None


def step_time_summary(seconds: list[float]) -> dict[str, Any]:
    """A training run's step times: each step's, the median and how many took under a minute."""
    return {
        "each": seconds,
        "median": statistics.median(seconds),
        "max": max(seconds),
        "under_60": sum(1 for x in seconds if x < 60),
        "steps": len(seconds),
    }


def summary(work: Path, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    records = {s: stage_records(work, s) for s in STAGES}
    result: dict[str, Any] = {"stages": {}, "changes": {}, "reference": {}}
    for s in STAGES:
        if records[s]:
            result["stages"][s] = stage_entry(records[s])
    held_out = {i.instance_id for i in read_instances(work / "held_out.jsonl")}
    for s in list(result["stages"]):
        result["stages"][s]["complete"] = result["stages"][s]["instances"] == len(held_out)
    for name, a, b in CHANGES:
        # paired on the instances both stages played (all of them when both are complete)
        common = {r.instance.instance_id for r in records[a]} & {
            r.instance.instance_id for r in records[b]
        }
        ra = [r for r in records[a] if r.instance.instance_id in common]
        rb = [r for r in records[b] if r.instance.instance_id in common]
        if ra and rb:
            rep = compare(ra, rb, seed=0, n_boot=2000, run_a=a, run_b=b)
            result["changes"][name] = change_entry(rep, unchanged(ra, rb))
    refs = sorted(
        p.name
        for p in (work / "runs").glob("*")
        if p.name == "random" or p.name.startswith("lazy_")
    )
    for ref in refs:
        rs = stage_records(work, ref)
        if rs:
            result["reference"][ref] = stage_entry(rs)
    lazies = {k: v for k, v in result["reference"].items() if k.startswith("lazy_")}
    if lazies:
        best = max(lazies, key=lambda k: lazies[k]["mean"])
        result["best_lazy"] = {"policy": best.replace("_", ":", 1), "mean": lazies[best]["mean"]}
        # the best lazy policy of each task (a task-aware cheater) as an upper bound
        tasks = {t for v in lazies.values() for t in v["tasks"]}
        per = {
            t: max(v["tasks"][t]["mean"] for v in lazies.values() if t in v["tasks"]) for t in tasks
        }
        result["best_lazy"]["per_task_best_mean"] = statistics.fmean(per.values())
    for model in ("sft", "sft_dagger", "grpo"):
        summ = _train_summary(work / "models" / model)
        if not summ:  # a summary left by an earlier run in OUT would pass for this one's
            (out / f"{model}_train_summary.json").unlink(missing_ok=True)
        else:
            shutil.copy(
                work / "models" / model / "train_summary.json", out / f"{model}_train_summary.json"
            )
            result.setdefault("training", {})[model] = {
                k: summ.get(k)
                for k in ("examples", "steps", "seconds", "tokens_per_example", "options")
                if k in summ
            }
            if summ.get("step_seconds"):
                result["training"][model]["step_seconds"] = step_time_summary(summ["step_seconds"])
    # the documented shape holds even when a stage did not run (mean / delta null)
    for s in STAGES:
        result["stages"].setdefault(s, {"mean": None, "complete": False, "note": "not run"})
    for name, a, b in CHANGES:
        result["changes"].setdefault(
            name, {"delta": None, "ci": None, "note": f"{a} or {b} has no held-out episodes"}
        )
    result["grpo_groups"] = grpo_groups(work / "models" / "grpo" / "rollouts")
    result["grpo_flat_groups_replaced"] = grpo_groups(
        work / "models" / "grpo" / "rollouts", agent="grpo:flat:step"
    )
    step_seconds = (_train_summary(work / "models" / "grpo") or {}).get("step_seconds") or []
    for g in result["grpo_groups"]:
        g["step_seconds"] = step_seconds[g["step"]] if g["step"] < len(step_seconds) else None
    result["plots"] = plot_curves(work, out)
    (out / "summary.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "table.md").write_text(table(result) + "\n")
    print(table(result))
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        "| policy | task | episodes | mean reward | success | end reasons |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    rows = [
        (LABELS[s], result["stages"][s]) for s in STAGES if result["stages"][s]["mean"] is not None
    ]
    rows += [(k.replace("_", ":", 1), v) for k, v in result.get("reference", {}).items()]
    for label, entry in rows:
        for task, t in entry["tasks"].items():
            reasons = ", ".join(f"{k} {v}" for k, v in t["end_reasons"].items())
            lines.append(
                f"| {label} | {task} | {t['episodes']} | {t['mean']:.3f} | {t['success']:.2f} | {reasons} |"
            )
        lines.append(
            f"| **{label}** | **all** | {entry['episodes']} | **{entry['mean']:.3f}** | "
            f"{entry['success']:.2f} | |"
        )
    lines += [
        "",
        "| change | delta | 95% CI (paired bootstrap) | verdict | instances up / down "
        "(solved gained / lost) | unchanged turns |",
        "| --- | ---: | --- | --- | --- | ---: |",
    ]
    for name, c in result["changes"].items():
        if c["delta"] is None:
            lines.append(f"| {name} | not measured ({c['note']}) | | | | |")
            continue
        rows = [(f"{name} (all tasks)", c), *((f"{name}: {k}", t) for k, t in c["tasks"].items())]
        for label, t in rows:
            ci = f"[{t['ci'][0]:+.3f}, {t['ci'][1]:+.3f}]" if t["ci"] else "-"
            lines.append(
                f"| {label} | {t['delta']:+.3f} | {ci} | {t['verdict']} | {moved_text(t)} | "
                f"{t.get('unchanged', '-')} |"
            )
    if result.get("grpo_groups"):
        lines += [
            "",
            "| GRPO step | task | instance (seed) | group rewards | group mean | step s |",
            "| ---: | --- | ---: | --- | ---: | ---: |",
        ]
        for g in result["grpo_groups"]:
            rewards = g["rewards"]
            shown = (
                f"all {rewards[0]:.2g}"
                if len(set(rewards)) == 1
                else ", ".join(f"{x:.2g}" for x in rewards)
            )
            seconds = g.get("step_seconds")
            lines.append(
                f"| {g['step'] + 1} | {g['task']} | {g['seed']} | {shown} | "
                f"{statistics.fmean(rewards):.3f} | {'-' if seconds is None else f'{seconds:.0f}'} |"
            )
    return "\n".join(lines)


def moved_text(entry: dict[str, Any]) -> str:
    """``+15 / -1 (+14 / -0)``; ``-`` for summaries written before these counts existed."""
    if entry.get("wins") is None:
        return "-"
    return (
        f"+{entry['wins']} / -{entry['losses']} "
        f"(+{entry['solved_gained']} / -{entry['solved_lost']})"
    )


def by_instance(runs: list[Path]) -> dict[str, list[EpisodeRecord]]:
    """The runs' episodes grouped by instance, in the order each instance first appears."""
    by: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in load_runs(runs, allow_empty=True).records:
        by[r.instance.instance_id].append(r)
    return by


def curriculum(runs: list[Path], out: Path) -> None:
    """The probed instances GRPO should train on: those the policy solves sometimes.

    First choice: instances whose samples differ in success (some solve, some do not);
    only when no instance does, those whose rewards differ, then those scored above zero,
    then all. Rewards alone are not enough: with partial credit for near misses (robot_reach
    pays up to 0.45 for stopping close), a group where every sample stops early still has
    rewards that differ, and GRPO then rewards the nearest early stop (v32).
    """
    by = by_instance(runs)
    groups = list(by.values())
    solved_sometimes = [rs for rs in groups if len({r.reward.success for r in rs}) > 1]
    varied = [rs for rs in groups if len({round(r.reward.total, 6) for r in rs}) > 1]
    nonzero = [rs for rs in groups if max(r.reward.total for r in rs) > 0]
    choices = (
        (solved_sometimes, "solved by some samples, not by others"),
        (varied, "rewards differ between samples"),
        (nonzero, "scored above zero at least once"),
        (groups, "all (none scored)"),
    )
    chosen, why = next(((kept, why) for kept, why in choices if kept), ([], "none probed"))
    with out.open("w") as f:
        for rs in chosen:
            f.write(rs[0].instance.model_dump_json() + "\n")
    means = [statistics.fmean(r.reward.total for r in rs) for rs in groups]
    per_task = Counter(rs[0].task for rs in chosen)
    print(
        f"curriculum: {len(chosen)} of {len(by)} probed instances ({why}; "
        f"{', '.join(f'{t} {n}' for t, n in sorted(per_task.items())) or 'none'}); "
        f"probe mean reward {statistics.fmean(means) if means else 0:.3f} -> {out}"
    )


def always_solved(runs: list[Path], out: Path) -> int:
    """Write the probed instances every sample of which succeeded to ``out``; their count.

    A task the policy almost always solves shows few instances with mixed outcomes in a
    few samples (v50's SFT model solved 37 of 40 thermal instances; 2 samples of 24 kept 6);
    sampling only these again finds its rare failures at a fraction of sampling them all.
    """
    by = by_instance(runs)
    kept = [rs[0].instance for rs in by.values() if all(r.reward.success for r in rs)]
    out.write_text("".join(i.model_dump_json() + "\n" for i in kept))
    print(f"always solved: {len(kept)} of {len(by)} probed instances -> {out}")
    return len(kept)


def draws(results: list[Path], change: str = "grpo_vs_sft", target: float = 0.05) -> dict[str, Any]:
    """``change`` in each results directory's summary.json, one draw each, and over all.

    A draw meets the target when its delta is at least ``target`` and its interval excludes
    0. One run's bootstrap interval covers the held-out instances, not the run's own seed,
    so a recipe's gain is read from several draws; ``same_base`` says whether they all
    start from the same stage (the same ``a_mean``), without which they are not comparable.
    """
    rows: list[dict[str, Any]] = []
    for d in results:
        path = d / "summary.json"
        if not path.is_file():
            raise SystemExit(
                f"{path} does not exist: give results directories written by `summary`"
            )
        entry = json.loads(path.read_text()).get("changes", {}).get(change) or {}
        if entry.get("delta") is None:
            raise SystemExit(
                f"{path} has no {change!r} change (choose one of {[c[0] for c in CHANGES]})"
            )
        ci = entry.get("ci")
        rows.append(
            {
                "run": d.name,
                "a_mean": entry["a_mean"],
                "delta": entry["delta"],
                "ci": ci,
                "met": entry["delta"] >= target and ci is not None and ci[0] > 0,
            }
        )
    deltas = [r["delta"] for r in rows]
    result = {
        "change": change,
        "target": target,
        "draws": rows,
        "mean": statistics.fmean(deltas),
        "sd": statistics.stdev(deltas) if len(deltas) > 1 else None,
        "min": min(deltas),
        "max": max(deltas),
        "met": sum(r["met"] for r in rows),
        "same_base": len({round(r["a_mean"], 9) for r in rows}) == 1,
    }
    return result


def draws_table(result: dict[str, Any]) -> str:
    lines = [
        f"| draw | {result['change']} | 95% CI | >= {result['target']:+.2f}, CI above 0 |",
        "| --- | ---: | --- | --- |",
    ]
    for r in result["draws"]:
        ci = "-" if r["ci"] is None else f"[{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}]"
        lines.append(
            f"| {r['run']} | {r['delta']:+.3f} | {ci} | {'met' if r['met'] else 'not met'} |"
        )
    sd = "" if result["sd"] is None else f", sd {result['sd']:.3f}"
    lines += [
        "",
        f"{len(result['draws'])} draws: mean {result['mean']:+.3f}{sd}, range "
        f"[{result['min']:+.3f}, {result['max']:+.3f}]; target met in {result['met']} of "
        f"{len(result['draws'])}"
        + ("" if result["same_base"] else "; WARNING: the draws start from different stages"),
    ]
    return "\n".join(lines)


# What a GRPO draw redoes: everything else of a workdir is the draws' common base.
DRAW_REDOES = ("models/grpo", "runs/grpo")


def new_draw(work: Path, new: Path) -> int:
    """Copy ``work`` to ``new`` without :data:`DRAW_REDOES`, re-pointing the paths the
    copied run.json files record from ``work`` to ``new``; returns the run.json rewritten."""
    if new.exists():
        raise SystemExit(f"{new} exists: give new-draw a directory that does not exist yet")
    if not (work / "runs").is_dir():
        raise SystemExit(f"{work} has no runs/: is it a workdir of smollm2_sft_grpo.sh?")
    redo = {(work / d).resolve() for d in DRAW_REDOES}

    def skip(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if (Path(folder) / n).resolve() in redo]

    shutil.copytree(work, new, symlinks=True, ignore=skip)
    # the script's paths are "$W/...", as given (relative or absolute): re-point both forms
    prefixes = [(str(work), str(new)), (str(work.resolve()), str(new.resolve()))]

    def repoint(value: Any) -> Any:
        if isinstance(value, str):
            for old, to in prefixes:
                if value == old or value.startswith(old.rstrip("/") + "/"):
                    return to + value[len(old) :]
            return value
        if isinstance(value, list):
            return [repoint(v) for v in value]
        if isinstance(value, dict):
            return {k: repoint(v) for k, v in value.items()}
        return value

    rewritten = 0
    for info in sorted(new.glob("runs/**/run.json")):
        before = json.loads(info.read_text())
        after = repoint(before)
        if after != before:
            info.write_text(json.dumps(after, indent=2) + "\n")
            rewritten += 1
    print(f"{new}: {work} without {', '.join(DRAW_REDOES)}; {rewritten} run.json re-pointed")
    return rewritten


def split(path: Path) -> None:
    by: dict[str, list[str]] = defaultdict(list)
    for line in path.read_text().splitlines():
        if line.strip():
            by[json.loads(line)["task"]].append(line)
    for task, lines in by.items():
        (path.parent / f"{path.stem}.{task}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"{task}: {len(lines)} instances")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary")
    s.add_argument("work", type=Path)
    s.add_argument("-o", "--out", type=Path, default=Path("experiments/results"))
    c = sub.add_parser("curriculum")
    c.add_argument("runs", type=Path, nargs="+")
    c.add_argument("-o", "--out", type=Path, required=True)
    a = sub.add_parser("always-solved")
    a.add_argument("runs", type=Path, nargs="+")
    a.add_argument("-o", "--out", type=Path, required=True)
    sp = sub.add_parser("split")
    sp.add_argument("instances", type=Path)
    dr = sub.add_parser("draws")
    dr.add_argument("results", type=Path, nargs="+")
    dr.add_argument("--change", default="grpo_vs_sft", choices=[c[0] for c in CHANGES])
    dr.add_argument("--target", type=float, default=0.05)
    dr.add_argument("-o", "--out", type=Path, help="also write the result as JSON here")
    nd = sub.add_parser("new-draw")
    nd.add_argument("work", type=Path)
    nd.add_argument("new", type=Path)
    args = p.parse_args()
    if args.cmd == "summary":
        summary(args.work, args.out)
    elif args.cmd == "draws":
        result = draws(args.results, args.change, args.target)
        if args.out:
            args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(draws_table(result))
    elif args.cmd == "curriculum":
        curriculum(args.runs, args.out)
    elif args.cmd == "always-solved":
        always_solved(args.runs, args.out)
    elif args.cmd == "new-draw":
        new_draw(args.work, args.new)
    else:
        split(args.instances)


if __name__ == "__main__":
    main()
