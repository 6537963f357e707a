"""A self-contained HTML report of a run directory or a loop directory (``bootcamp report --html``).

One file, no external assets: plots are drawn with matplotlib's Agg canvas (no display,
no global backend change) and embedded as base64 PNG ``<img>`` tags. Sections:

* overview: per run and task, episodes, mean reward, success, pass@k, turns, end reasons
  (:func:`agentharness.store.summarize`, as ``bootcamp report`` prints them);
* one section per task (``id="task-<task id>"``): reward distribution of every run, end
  reasons, and the failure clusters of that task;
* failure clusters: from each ``mine.json`` found in the loop directory (``bootcamp mine``'s
  :class:`~agentharness.loop.mine.MineReport`), otherwise ``bootcamp mine``'s clusters of
  each run, computed here;
* before/after, for a loop directory: per ``round_k``, the held-out run before training
  (``round_k/heldout_before``, or the previous round's ``heldout_after``) against
  ``round_k/heldout_after``, and ``round_k/compare.json``
  (:class:`~agentharness.loop.compare.CompareReport`) when present.

A loop directory is any directory holding run directories (``episodes.jsonl``) up to
three levels down; runs are found, named and read as everywhere else
(:func:`agentharness.store.named_run_dirs`, :func:`agentharness.store.load_runs`), and
unusable input is a :class:`~agentharness.store.run.RunDirError`. Corrupt lines are
skipped and listed in the report; tasks are reported by versioned id, so a mix of
versions shows as separate sections (with a note).
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel, ValidationError

from agentharness.core.registry import group_versions
from agentharness.loop.compare import CompareReport
from agentharness.loop.mine import FailureCluster, MineReport, mine
from agentharness.store.reader import load_runs, named_run_dirs
from agentharness.store.run import RunDirError
from agentharness.store.schema import EpisodeRecord
from agentharness.store.summary import RunSummary, summarize

MAX_PLOTTED_RUNS = 8
MAX_TABLE_ROWS = 40


@dataclass
class LoadedRun:
    name: str
    path: Path
    records: list[EpisodeRecord]
    summary: RunSummary


@dataclass
class Round:
    """One round of a loop directory: the held-out runs before and after, and compare.json."""

    name: str
    before: LoadedRun | None
    after: LoadedRun | None
    compare: CompareReport | None


@dataclass
class ReportData:
    source: Path
    runs: list[LoadedRun]
    mined: list[tuple[str, MineReport]]  # (path relative to the source, mine.json)
    rounds: list[Round]
    notes: list[str] = field(default_factory=list)


# -- discovery ------------------------------------------------------------------------


def _read_model(path: Path, model: type[Any], notes: list[str]) -> Any:
    """``path`` read as ``model`` (a stage's JSON report), or ``None`` with a note why not."""
    try:
        return model.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as e:
        what = e.strerror if isinstance(e, OSError) else f"not a {model.__name__}"
        notes.append(f"{path}: left out ({what})")
        return None


def _round_key(p: Path) -> tuple[int, str]:
    m = re.fullmatch(r"round_(\d+)", p.name)
    return (int(m.group(1)) if m else 10**9, p.name)


def collect(path: Path) -> ReportData:
    """Everything the report shows, read from a run directory or a loop directory."""
    path = Path(path)
    notes: list[str] = []
    runs: list[LoadedRun] = []
    for name, d in named_run_dirs([path]):
        loaded = load_runs([d], allow_empty=True)
        notes.extend(loaded.warnings)
        if loaded.records:
            runs.append(LoadedRun(name, d, loaded.records, summarize(loaded.records)))
        else:
            notes.append(f"{d}: no readable episodes (left out)")
    if not runs:
        raise RunDirError(f"{path}: no readable episodes in any run directory")

    mined = []
    for p in sorted(
        {*path.glob("mine.json"), *path.glob("*/mine.json"), *path.glob("*/*/mine.json")}
    ):
        report = _read_model(p, MineReport, notes)
        if report is not None:
            mined.append((p.relative_to(path).as_posix(), report))

    by_path = {r.path.resolve(): r for r in runs}
    rounds: list[Round] = []
    previous_after: LoadedRun | None = None
    round_dirs = sorted((p for p in path.glob("round_*") if p.is_dir()), key=_round_key)
    for rd in [path, *round_dirs]:
        before = by_path.get((rd / "heldout_before").resolve()) or (
            previous_after if rd != path else None
        )
        after = by_path.get((rd / "heldout_after").resolve())
        compare_json = rd / "compare.json"
        compare = (
            _read_model(compare_json, CompareReport, notes) if compare_json.is_file() else None
        )
        if (before and after) or compare is not None:
            rounds.append(Round(rd.name if rd != path else path.name, before, after, compare))
        if after is not None:
            previous_after = after

    for name, ids in group_versions(r.task for run in runs for r in run.records).items():
        if len(ids) > 1:
            notes.append(
                f"task {name} appears under several versions ({', '.join(ids)}); "
                "each version is reported separately"
            )
    return ReportData(source=path, runs=runs, mined=mined, rounds=rounds, notes=notes)


# -- plotting -------------------------------------------------------------------------


def _figure(width: float = 6.4, height: float = 3.2) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=90, layout="constrained")


def _img(fig: Any, alt: str) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


def _reward_hist(task: str, series: list[tuple[str, list[float]]]) -> str:
    import numpy as np

    fig = _figure()
    ax = fig.add_subplot()
    bins = np.linspace(0.0, 1.0, 21)
    for name, rewards in series[:MAX_PLOTTED_RUNS]:
        ax.hist(
            rewards, bins=bins, histtype="step", linewidth=1.8, label=f"{name} (n={len(rewards)})"
        )
    ax.set_xlabel("reward")
    ax.set_ylabel("episodes")
    ax.set_xlim(0, 1)
    ax.set_title(f"{task}: reward distribution")
    ax.legend(fontsize=7)
    return _img(fig, f"reward distribution of {task}")


def _grouped_barh(
    title: str, categories: list[str], series: list[tuple[str, list[float]]], xlabel: str
) -> str:
    import numpy as np

    fig = _figure(6.4, max(2.0, 0.35 * len(categories) * max(1, len(series)) ** 0.5 + 1.0))
    ax = fig.add_subplot()
    series = series[:MAX_PLOTTED_RUNS]
    y = np.arange(len(categories))
    height = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series):
        bars = ax.barh(y + i * height, values, height=height, label=name)
        ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=2)
    ax.set_yticks(y + height * (len(series) - 1) / 2, labels=categories, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    if len(series) > 1:
        ax.legend(fontsize=7)
    return _img(fig, title)


def _before_after_plot(name: str, rows: list[dict[str, Any]]) -> str:
    import numpy as np

    fig = _figure(6.4, 3.2)
    ax = fig.add_subplot()
    x = np.arange(len(rows))
    for shift, key in ((-0.2, "before"), (0.2, "after")):
        bars = ax.bar(
            x + shift, [r[key] for r in rows], 0.4, yerr=[r[f"{key}_se"] for r in rows], label=key
        )
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks(x, labels=[r["task"] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.8, len(rows) - 0.2)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean reward")
    ax.set_title(f"{name}: held-out reward before and after (± s.e.)")
    ax.legend(fontsize=7)
    return _img(fig, f"before/after of {name}")


# -- tables and helpers ---------------------------------------------------------------


class _Html(str):
    """Markup made here (links into the viewer), placed in tables as is."""


def _viewer_link(viewer: str | None, route: str, text: str, **params: Any) -> str:
    """A link to ``bootcamp view`` at ``viewer`` (escaped text alone when there is no viewer)."""
    if not viewer:
        return _Html(html.escape(text))
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    href = viewer.rstrip("/") + route + ("?" + query if query else "")
    return _Html(f'<a class="view" href="{html.escape(href)}">{html.escape(text)}</a>')


def _esc(value: Any) -> str:
    if isinstance(value, _Html):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False)
        return html.escape(text if len(text) <= 160 else text[:157] + "...")
    return html.escape(str(value))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>"
        for row in rows[:MAX_TABLE_ROWS]
    )
    more = (
        f'<p class="note">... {len(rows) - MAX_TABLE_ROWS} more rows not shown</p>'
        if len(rows) > MAX_TABLE_ROWS
        else ""
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _fields(model: BaseModel, *names: str) -> str:
    """A field/value table of some fields of a report."""
    return _table(["field", "value"], [[n, getattr(model, n)] for n in names])


@dataclass(frozen=True)
class _ClusterRow:
    """A failure cluster and where it comes from: a run (computed here) or a mine.json."""

    origin: str
    cluster: FailureCluster
    run: str | None = None  # the run holding its episodes, when known


def _computed_clusters(runs: list[LoadedRun]) -> list[_ClusterRow]:
    """``bootcamp mine``'s clusters of each run, biggest first (for runs without mine.json)."""
    rows = [
        _ClusterRow(run.name, c, run.name)
        for run in runs
        for c in mine(run.records, examples=2).clusters
    ]
    rows.sort(
        key=lambda r: (
            -r.cluster.failures,
            r.origin,
            r.cluster.task,
            r.cluster.end_reason,
            r.cluster.difficulty,
        )
    )
    return rows


def _cluster_table(rows: list[_ClusterRow], origin: str, viewer: str | None = None) -> str:
    """Clusters with links into the viewer: a run's failures, and example episodes."""
    cols = [origin, "task", "difficulty", "end_reason", "weakest", "failures", "episodes"]
    cols += ["rate", "mean_reward", "off_preset", "examples"]
    table = []
    for row in rows:
        c = row.cluster
        ids = [e.episode_id for e in c.examples[:2]]
        examples = ", ".join(
            _viewer_link(viewer, "/episode", i, run=row.run, id=i)
            if row.run
            else _viewer_link(viewer, "/", i, q=i)  # mine.json: any run holding it
            for i in ids
        )
        failures: Any = c.failures
        if row.run and viewer:
            failures = _viewer_link(
                viewer,
                "/",
                str(c.failures),
                run=row.run,
                task=c.task,
                end_reason=c.end_reason,
                difficulty=c.difficulty,
                success="no",
            )
        table.append(
            [
                row.origin,
                c.task,
                c.difficulty,
                c.end_reason,
                c.weakest,
                failures,
                c.episodes,
                c.rate,
                c.mean_reward,
                c.off_preset,
                _Html(examples),
            ]
        )
    return _table(cols, table)


def _se(values: list[float]) -> float:
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0


def _before_after_rows(before: LoadedRun, after: LoadedRun) -> list[dict[str, Any]]:
    b: dict[str, list[float]] = defaultdict(list)
    a: dict[str, list[float]] = defaultdict(list)
    for r in before.records:
        b[r.task].append(r.reward.total)
    for r in after.records:
        a[r.task].append(r.reward.total)
    rows = []
    for task in sorted(set(a) & set(b)):
        sb, sa = before.summary.task(task), after.summary.task(task)
        assert sb is not None and sa is not None
        rows.append(
            {
                "task": task,
                "before": sb.mean_reward,
                "after": sa.mean_reward,
                "before_se": _se(b[task]),
                "after_se": _se(a[task]),
                "success_before": sb.success_rate,
                "success_after": sa.success_rate,
                "n_before": sb.episodes,
                "n_after": sa.episodes,
            }
        )
    return rows


def _compare_table(report: CompareReport) -> str:
    rows = []
    for t in [*report.tasks, *([report.overall] if report.overall else [])]:
        ci = t.reward.ci
        rows.append(
            [
                t.task,
                t.reward.a,
                t.reward.b,
                t.reward.delta,
                f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "",
                t.success.a,
                t.success.b,
                t.wins_text(),
                t.verdict,
            ]
        )
    header = ["task", "reward A", "reward B", "delta", "CI", "success A", "success B"]
    return _table([*header, "instances B won / lost", "verdict"], rows)


# -- page -----------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
td,th{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.note{color:#666;font-size:.85em}img{max-width:100%;margin:.5em 0}
pre{background:#f7f7f7;padding:.5em;overflow:auto;font-size:.8em}
nav a{margin-right:1em}
"""


def _slug(task: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", task)


def _header(data: ReportData, tasks: list[str], viewer: str | None) -> list[str]:
    n_episodes = sum(len(run.records) for run in data.runs)
    parts = [f"<h1>agentharness report: {html.escape(str(data.source))}</h1>"]
    parts.append(
        f'<p class="note">{len(data.runs)} run(s), {n_episodes} episodes, {len(tasks)} task(s)</p>'
    )
    nav = "".join(f'<a href="#task-{_slug(t)}">{html.escape(t)}</a>' for t in tasks)
    parts.append(
        f'<nav>{nav}<a href="#failures">failure clusters</a>'
        + ('<a href="#before-after">before/after</a>' if data.rounds else "")
        + "</nav>"
    )
    if viewer:
        parts.append(
            f'<p class="note">Links open the trajectory viewer at {html.escape(viewer)}; start it '
            f"with <code>bootcamp view {html.escape(str(data.source))}</code>.</p>"
        )
    if data.notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in data.notes)
        parts.append(f"<h2>Notes</h2><ul>{items}</ul>")
    return parts


def _overview(data: ReportData, tasks: list[str], viewer: str | None) -> list[str]:
    rows = []
    for run in data.runs:
        for s in run.summary.tasks:
            rows.append(
                [
                    _viewer_link(viewer, "/", run.name, run=run.name, task=s.task),
                    s.task,
                    s.episodes,
                    s.mean_reward,
                    s.success_rate,
                    s.pass_at[1],
                    f"{s.pass_at_k:.2f} (k={s.k})",
                    f"{s.mean_turns:.1f}",
                    ", ".join(f"{k}={v}" for k, v in s.end_reasons.items()),
                ]
            )
    headers = ["run", "task", "episodes", "mean reward", "success", "pass@1", "pass@k", "turns"]
    parts = ["<h2>Overview</h2>", _table([*headers, "end reasons"], rows)]
    if len(tasks) > 1:
        series = []
        for run in data.runs:
            means = [(run.summary.task(t), t) for t in tasks]
            series.append((run.name, [s.mean_reward if s else 0.0 for s, _ in means]))
        parts.append(_grouped_barh("mean reward per task", tasks, series, "mean reward"))
    return parts


def _task_section(
    data: ReportData, task: str, computed: list[_ClusterRow], viewer: str | None
) -> list[str]:
    parts = [f'<section id="task-{_slug(task)}"><h2>Task {html.escape(task)}</h2>']
    if viewer:
        parts.append("<p>" + _viewer_link(viewer, "/", "browse its episodes", task=task) + "</p>")
    series = [
        (run.name, [r.reward.total for r in run.records if r.task == task]) for run in data.runs
    ]
    parts.append(_reward_hist(task, [(n, v) for n, v in series if v]))
    end_reasons = sorted({r.end_reason for run in data.runs for r in run.records if r.task == task})
    counts = []
    for run in data.runs:
        per_reason = Counter(r.end_reason for r in run.records if r.task == task)
        if per_reason:
            counts.append((run.name, [float(per_reason[e]) for e in end_reasons]))
    parts.append(_grouped_barh(f"{task}: end reasons", end_reasons, counts, "episodes"))
    if data.mined:
        rows = [_ClusterRow(src, c) for src, m in data.mined for c in m.clusters if c.task == task]
        parts.append("<h3>Failure clusters (mine.json)</h3>")
        parts.append(_cluster_table(rows, "source", viewer) if rows else '<p class="note">none</p>')
    else:
        rows = [r for r in computed if r.cluster.task == task]
        parts.append("<h3>Failures by end reason and difficulty</h3>")
        parts.append(
            _cluster_table(rows, "run", viewer)
            if rows
            else '<p class="note">no failed episodes</p>'
        )
    parts.append("</section>")
    return parts


def _largest(title: str, rows: list[_ClusterRow]) -> str:
    top = sorted(rows, key=lambda r: -r.cluster.failures)[:12]
    labels = [f"{r.cluster.task} {r.cluster.difficulty} {r.cluster.end_reason}"[:60] for r in top]
    return _grouped_barh(
        title, labels, [("failures", [float(r.cluster.failures) for r in top])], "failures"
    )


def _failures(data: ReportData, computed: list[_ClusterRow], viewer: str | None) -> list[str]:
    parts = ['<section id="failures"><h2>Failure clusters</h2>']
    if data.mined:
        for src, report in data.mined:
            parts.append(f"<h3>{html.escape(src)}</h3>")
            parts.append(_fields(report, "episodes", "failures", "failure_rate"))
            rows = [_ClusterRow(src, c) for c in report.clusters]
            if rows:
                parts.append(_largest(f"{src}: largest clusters", rows))
                parts.append(_cluster_table(rows, "source", viewer))
            else:
                parts.append('<p class="note">no clusters (no failures)</p>')
    elif computed:
        parts.append(
            '<p class="note">No mine.json found: these are the clusters <code>bootcamp mine</code> '
            "finds in each run (task, difficulty, knob bins, end reason, weakest reward "
            "component).</p>"
        )
        parts.append(_largest("largest failure groups", computed))
        parts.append(_cluster_table(computed, "run", viewer))
    else:
        parts.append('<p class="note">No failed episodes.</p>')
    parts.append("</section>")
    return parts


def _before_after(rnd: Round, viewer: str | None) -> list[str]:
    parts = [f"<h3>{html.escape(rnd.name)}</h3>"]
    before, after = rnd.before, rnd.after
    if before is not None and after is not None:
        side_by_side = _viewer_link(
            viewer, "/compare", "side by side per instance", a=before.name, b=after.name
        )
        parts.append(
            f'<p class="note">before: {html.escape(before.name)}; after: {html.escape(after.name)}'
            + (f" · {side_by_side}" if viewer else "")
            + "</p>"
        )
        ba = _before_after_rows(before, after)
        if ba:
            parts.append(_before_after_plot(rnd.name, ba))
            headers = ["task", "reward before", "reward after", "delta"]
            headers += ["success before", "success after", "episodes"]
            rows = [
                [
                    r["task"],
                    r["before"],
                    r["after"],
                    f"{r['after'] - r['before']:+.3f}",
                    r["success_before"],
                    r["success_after"],
                    f"{r['n_before']} / {r['n_after']}",
                ]
                for r in ba
            ]
            parts.append(_table(headers, rows))
        else:
            parts.append('<p class="note">the two runs share no task</p>')
    if rnd.compare is not None:
        parts.append("<h4>compare.json</h4>")
        parts.append(_compare_table(rnd.compare))
    return parts


def render(data: ReportData, viewer: str | None = None) -> str:
    """The report page for collected data; with ``viewer`` (the URL of ``bootcamp view``),
    runs, tasks, failure groups and example episodes link into the viewer."""
    tasks = sorted({s.task for run in data.runs for s in run.summary.tasks})
    computed = _computed_clusters(data.runs) if not data.mined else []
    parts = _header(data, tasks, viewer) + _overview(data, tasks, viewer)
    for task in tasks:
        parts += _task_section(data, task, computed, viewer)
    parts += _failures(data, computed, viewer)
    if data.rounds:
        parts.append('<section id="before-after"><h2>Before / after</h2>')
        for rnd in data.rounds:
            parts += _before_after(rnd, viewer)
        parts.append("</section>")
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>agentharness report: {html.escape(data.source.name)}</title>"
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def write_html_report(path: Path, out: Path, viewer: str | None = None) -> Path:
    """Write the HTML report of the run or loop directory ``path`` to ``out``; returns ``out``.

    ``viewer`` is the URL of ``bootcamp view PATH`` the report links into (``None``: no
    links). Raises :class:`~agentharness.store.run.RunDirError` for a missing path, one with
    no run directory in it, or runs with no readable episode.
    """
    page = render(collect(Path(path)), viewer)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
