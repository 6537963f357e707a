"""A self-contained HTML report of a run directory or a loop directory (``bootcamp report --html``).

One file, no external assets: plots are drawn with matplotlib's Agg canvas (no display,
no global backend change) and embedded as base64 PNG ``<img>`` tags. Sections:

* overview: per run and task, episodes, mean reward, success, pass@k, turns, end reasons;
* one section per task (``id="task-<task id>"``): reward distribution of every run, end
  reasons, and the failure clusters of that task;
* failure clusters: from each ``mine.json`` found in the loop directory (``bootcamp mine``'s
  JSON), otherwise a grouping of the failed episodes by task x end reason x difficulty;
* before/after, for a loop directory: per ``round_k``, the held-out run before training
  (``round_k/heldout_before``, or the previous round's ``heldout_after``) against
  ``round_k/heldout_after``, and ``round_k/compare.json`` when present.

A loop directory is any directory holding run directories (``episodes.jsonl``) up to
three levels down. Corrupt lines are skipped and listed in the report; tasks are reported
by versioned id, so a mix of versions shows as separate sections (with a note).
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import statistics
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from agentharness.loop.runs import task_versions
from agentharness.store.run import EPISODES, CorruptLineWarning, RunDir, RunDirError, find_run_dirs
from agentharness.store.schema import EpisodeRecord
from agentharness.store.summary import summarize

MAX_PLOTTED_RUNS = 8
MAX_TABLE_ROWS = 40


class ReportError(ValueError):
    """A path the report cannot be made from."""


@dataclass
class LoadedRun:
    name: str
    path: Path
    records: list[EpisodeRecord]
    warnings: list[str] = field(default_factory=list)


@dataclass
class ReportData:
    source: Path
    runs: list[LoadedRun]
    mined: list[tuple[str, Any]]  # (relative path, parsed mine.json)
    rounds: list[dict[str, Any]]  # {"name", "before", "after", "compare"}
    notes: list[str]


# -- discovery ------------------------------------------------------------------------


def _load_run(path: Path, name: str) -> LoadedRun:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CorruptLineWarning)
        try:
            records = list(RunDir(path).episodes())
        except RunDirError as e:
            raise ReportError(str(e)) from e
    notes = [str(w.message) for w in caught if issubclass(w.category, CorruptLineWarning)]
    return LoadedRun(name=name, path=path, records=records, warnings=notes)


def _read_json(path: Path, notes: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        notes.append(f"{path}: unreadable JSON ({e})")
        return None


def _round_key(p: Path) -> tuple[int, str]:
    m = re.fullmatch(r"round_(\d+)", p.name)
    return (int(m.group(1)) if m else 10**9, p.name)


def collect(path: Path) -> ReportData:
    """Everything the report shows, read from a run directory or a loop directory."""
    path = Path(path)
    if not path.exists():
        raise ReportError(f"{path} does not exist; pass a run directory or a loop directory")
    if not path.is_dir():
        raise ReportError(f"{path} is not a directory; pass a run directory or a loop directory")
    run_dirs = find_run_dirs(path)
    if not run_dirs:
        raise ReportError(
            f"{path} holds no run directory (no {EPISODES} up to three levels down); "
            "make one with `bootcamp eval --out`"
        )
    notes: list[str] = []
    runs: list[LoadedRun] = []
    for d in run_dirs:
        name = "." if d == path else d.relative_to(path).as_posix()
        run = _load_run(d, name if name != "." else path.resolve().name)
        notes.extend(run.warnings)
        if run.records:
            runs.append(run)
        else:
            notes.append(f"{d}: no readable episodes (left out)")
    if not runs:
        raise ReportError(f"{path}: no readable episodes in any run directory")

    mined = []
    for p in sorted(
        {*path.glob("mine.json"), *path.glob("*/mine.json"), *path.glob("*/*/mine.json")}
    ):
        data = _read_json(p, notes)
        if data is not None:
            mined.append((p.relative_to(path).as_posix(), data))

    by_path = {r.path.resolve(): r for r in runs}
    rounds: list[dict[str, Any]] = []
    previous_after: LoadedRun | None = None
    round_dirs = sorted((p for p in path.glob("round_*") if p.is_dir()), key=_round_key)
    for rd in [path, *round_dirs]:
        before = by_path.get((rd / "heldout_before").resolve()) or (
            previous_after if rd != path else None
        )
        after = by_path.get((rd / "heldout_after").resolve())
        compare = (
            _read_json(rd / "compare.json", notes) if (rd / "compare.json").is_file() else None
        )
        if (before and after) or compare is not None:
            rounds.append(
                {
                    "name": rd.name if rd != path else path.name,
                    "before": before,
                    "after": after,
                    "compare": compare,
                }
            )
        if after is not None:
            previous_after = after

    versions = task_versions(r for run in runs for r in run.records)
    for name, ids in versions.items():
        if len(ids) > 1:
            notes.append(
                f"task {name} appears under several versions ({', '.join(sorted(ids))}); "
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


def _render_json(data: Any) -> str:
    """A readable rendering of JSON whose layout is not known in advance."""
    if isinstance(data, list) and data and all(isinstance(x, dict) for x in data):
        keys: list[str] = []
        for x in data:
            keys.extend(k for k in x if k not in keys)
        return _table(keys, [[x.get(k, "") for k in keys] for x in data])
    if isinstance(data, dict) and all(not isinstance(v, dict | list) for v in data.values()):
        return _table(["field", "value"], [[k, v] for k, v in data.items()])
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if len(text) > 20000:
        text = text[:20000] + "\n..."
    return f"<pre>{html.escape(text)}</pre>"


def _clusters_of(data: Any) -> list[dict[str, Any]] | None:
    """The cluster list of a mine.json (``{"clusters": [...]}`` or a bare list)."""
    if isinstance(data, dict):
        data = data.get("clusters")
    if isinstance(data, list) and all(isinstance(x, dict) for x in data):
        return data
    return None


def _computed_clusters(runs: list[LoadedRun]) -> list[dict[str, Any]]:
    """``bootcamp mine``'s clusters of each run, biggest first (for runs without mine.json)."""
    from agentharness.loop.mine import mine

    out: list[dict[str, Any]] = []
    for run in runs:
        for cluster in mine(run.records, examples=2).clusters:
            row = cluster.model_dump(
                include={"task", "difficulty", "end_reason", "weakest", "failures", "episodes"}
            )
            row.update(
                run=run.name,
                rate=cluster.rate,
                mean_reward=cluster.mean_reward,
                examples=[e.episode_id for e in cluster.examples],
            )
            out.append(row)
    out.sort(key=lambda c: (-c["failures"], c["run"], c["task"], c["end_reason"], c["difficulty"]))
    return out


CLUSTER_COLUMNS = (
    "task",
    "difficulty",
    "end_reason",
    "weakest",
    "failures",
    "episodes",
    "rate",
    "mean_reward",
)


def _cluster_table(
    clusters: list[dict[str, Any]], extra_first: str | None = None, viewer: str | None = None
) -> str:
    known = [c for c in CLUSTER_COLUMNS if any(c in x for x in clusters)]
    if not known:
        return _render_json(clusters)
    cols = ([extra_first] if extra_first else []) + known
    if any("off_preset" in x for x in clusters):
        cols.append("off_preset")
    if any("examples" in x for x in clusters):
        cols.append("examples")
    rows = []
    for c in clusters:
        row = []
        for col in cols:
            value = c.get(col, "")
            if col == "examples" and isinstance(value, list):
                ids = [
                    str(e.get("episode_id", e)) if isinstance(e, dict) else str(e)
                    for e in value[:2]
                ]
                value = _Html(
                    ", ".join(
                        _viewer_link(viewer, "/episode", i, run=c["run"], id=i)
                        if "run" in c
                        else _viewer_link(viewer, "/", i, q=i)  # mine.json: any run holding it
                        for i in ids
                    )
                )
            elif col == "failures" and "run" in c and viewer:
                value = _viewer_link(
                    viewer,
                    "/",
                    str(value),
                    run=c["run"],
                    task=c.get("task"),
                    end_reason=c.get("end_reason"),
                    difficulty=c.get("difficulty"),
                    success="no",
                )
            row.append(value)
        rows.append(row)
    return _table(cols, rows)


def _task_matches(cluster: dict[str, Any], task: str) -> bool:
    t = str(cluster.get("task", ""))
    return t == task or (bool(t) and task.startswith(t + "-v"))


def _se(values: list[float]) -> float:
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0


def _before_after_rows(before: LoadedRun, after: LoadedRun) -> list[dict[str, Any]]:
    b: dict[str, list[float]] = defaultdict(list)
    a: dict[str, list[float]] = defaultdict(list)
    bs: dict[str, list[float]] = defaultdict(list)
    as_: dict[str, list[float]] = defaultdict(list)
    for r in before.records:
        b[r.task].append(r.reward.total)
        bs[r.task].append(float(r.reward.success))
    for r in after.records:
        a[r.task].append(r.reward.total)
        as_[r.task].append(float(r.reward.success))
    rows = []
    for task in sorted(set(a) & set(b)):
        rows.append(
            {
                "task": task,
                "before": statistics.fmean(b[task]),
                "after": statistics.fmean(a[task]),
                "before_se": _se(b[task]),
                "after_se": _se(a[task]),
                "success_before": statistics.fmean(bs[task]),
                "success_after": statistics.fmean(as_[task]),
                "n_before": len(b[task]),
                "n_after": len(a[task]),
            }
        )
    return rows


def _compare_table(data: Any) -> str:
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not (isinstance(tasks, list) and all(isinstance(t, dict) and "task" in t for t in tasks)):
        return _render_json(data)
    rows = []
    overall = data.get("overall")
    for t in [*tasks, *([overall] if isinstance(overall, dict) else [])]:
        rw = t.get("reward") if isinstance(t.get("reward"), dict) else {}
        sc = t.get("success") if isinstance(t.get("success"), dict) else {}
        ci = rw.get("ci")
        ci_text = (
            f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if isinstance(ci, list | tuple) and len(ci) == 2 else ""
        )
        rows.append(
            [
                t.get("task"),
                rw.get("a", ""),
                rw.get("b", ""),
                rw.get("delta", ""),
                ci_text,
                sc.get("a", ""),
                sc.get("b", ""),
                t.get("verdict", ""),
            ]
        )
    return _table(
        ["task", "reward A", "reward B", "delta", "CI", "success A", "success B", "verdict"], rows
    )


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


def render(data: ReportData, viewer: str | None = None) -> str:
    """The report page for collected data; with ``viewer`` (the URL of ``bootcamp view``),
    runs, tasks, failure groups and example episodes link into the viewer."""
    parts: list[str] = []
    tasks = sorted({r.task for run in data.runs for r in run.records})
    n_episodes = sum(len(run.records) for run in data.runs)
    parts.append(f"<h1>agentharness report: {html.escape(str(data.source))}</h1>")
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

    # Overview
    parts.append("<h2>Overview</h2>")
    rows = []
    summaries = {run.name: summarize(run.records) for run in data.runs}
    for run in data.runs:
        for task, s in summaries[run.name].items():
            reasons = ", ".join(f"{k}={v}" for k, v in s["end_reasons"].items())
            pass_k = s["pass@{}".format(s["k"])]
            rows.append(
                [
                    _viewer_link(viewer, "/", run.name, run=run.name, task=task),
                    task,
                    s["episodes"],
                    s["mean_reward"],
                    s["success_rate"],
                    s["pass@1"],
                    f"{pass_k:.2f} (k={s['k']})",
                    f"{s['mean_turns']:.1f}",
                    reasons,
                ]
            )
    parts.append(
        _table(
            [
                "run",
                "task",
                "episodes",
                "mean reward",
                "success",
                "pass@1",
                "pass@k",
                "turns",
                "end reasons",
            ],
            rows,
        )
    )
    if len(tasks) > 1:
        parts.append(
            _grouped_barh(
                "mean reward per task",
                tasks,
                [
                    (
                        run.name,
                        [summaries[run.name].get(t, {}).get("mean_reward", 0.0) for t in tasks],
                    )
                    for run in data.runs
                ],
                "mean reward",
            )
        )

    mined_clusters = [(src, c) for src, d in data.mined for c in (_clusters_of(d) or [])]
    computed = _computed_clusters(data.runs) if not data.mined else []

    # Per task
    for task in tasks:
        parts.append(f'<section id="task-{_slug(task)}"><h2>Task {html.escape(task)}</h2>')
        if viewer:
            parts.append(
                "<p>" + _viewer_link(viewer, "/", "browse its episodes", task=task) + "</p>"
            )
        series = [
            (run.name, [r.reward.total for r in run.records if r.task == task]) for run in data.runs
        ]
        series = [(n, v) for n, v in series if v]
        parts.append(_reward_hist(task, series))
        end_reasons = sorted(
            {r.end_reason for run in data.runs for r in run.records if r.task == task}
        )
        counts = []
        for run in data.runs:
            per_reason = Counter(r.end_reason for r in run.records if r.task == task)
            if per_reason:
                counts.append((run.name, [float(per_reason[e]) for e in end_reasons]))
        parts.append(_grouped_barh(f"{task}: end reasons", end_reasons, counts, "episodes"))
        if mined_clusters:
            mine_rows = [
                {"source": src, **c} for src, c in mined_clusters if _task_matches(c, task)
            ]
            parts.append("<h3>Failure clusters (mine.json)</h3>")
            parts.append(
                _cluster_table(mine_rows, "source", viewer)
                if mine_rows
                else '<p class="note">none</p>'
            )
        else:
            task_rows = [c for c in computed if c["task"] == task]
            parts.append("<h3>Failures by end reason and difficulty</h3>")
            parts.append(
                _cluster_table(task_rows, "run", viewer)
                if task_rows
                else '<p class="note">no failed episodes</p>'
            )
        parts.append("</section>")

    # Failure clusters
    parts.append('<section id="failures"><h2>Failure clusters</h2>')
    if data.mined:
        for src, d in data.mined:
            parts.append(f"<h3>{html.escape(src)}</h3>")
            if isinstance(d, dict):
                head = {k: v for k, v in d.items() if not isinstance(v, dict | list)}
                if head:
                    parts.append(_render_json(head))
            clusters = _clusters_of(d)
            if clusters is None:
                parts.append(_render_json(d))
            elif clusters:
                top = sorted(clusters, key=lambda c: -float(c.get("failures", 0) or 0))[:12]
                labels = [
                    f"{c.get('task', '?')} {c.get('difficulty', '')} {c.get('end_reason', '')}".strip()[
                        :60
                    ]
                    for c in top
                ]
                parts.append(
                    _grouped_barh(
                        f"{src}: largest clusters",
                        labels,
                        [("failures", [float(c.get("failures", 0) or 0) for c in top])],
                        "failures",
                    )
                )
                parts.append(_cluster_table(clusters, viewer=viewer))
            else:
                parts.append('<p class="note">no clusters (no failures)</p>')
    elif computed:
        parts.append(
            '<p class="note">No mine.json found: these are the clusters <code>bootcamp mine</code> '
            "finds in each run (task, difficulty, knob bins, end reason, weakest reward "
            "component).</p>"
        )
        top = computed[:12]
        labels = [f"{c['task']} {c['end_reason']} {c['difficulty']}" for c in top]
        parts.append(
            _grouped_barh(
                "largest failure groups",
                labels,
                [("failures", [float(c["failures"]) for c in top])],
                "failures",
            )
        )
        parts.append(_cluster_table(computed, "run", viewer))
    else:
        parts.append('<p class="note">No failed episodes.</p>')
    parts.append("</section>")

    # Before/after
    if data.rounds:
        parts.append('<section id="before-after"><h2>Before / after</h2>')
        for rnd in data.rounds:
            parts.append(f"<h3>{html.escape(rnd['name'])}</h3>")
            before, after = rnd["before"], rnd["after"]
            if before is not None and after is not None:
                ba = _before_after_rows(before, after)
                parts.append(
                    f'<p class="note">before: {html.escape(before.name)}; after: {html.escape(after.name)}'
                    + (
                        " · "
                        + _viewer_link(
                            viewer,
                            "/compare",
                            "side by side per instance",
                            a=before.name,
                            b=after.name,
                        )
                        if viewer
                        else ""
                    )
                    + "</p>"
                )
                if ba:
                    parts.append(_before_after_plot(rnd["name"], ba))
                    parts.append(
                        _table(
                            [
                                "task",
                                "reward before",
                                "reward after",
                                "delta",
                                "success before",
                                "success after",
                                "episodes",
                            ],
                            [
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
                            ],
                        )
                    )
                else:
                    parts.append('<p class="note">the two runs share no task</p>')
            if rnd["compare"] is not None:
                parts.append("<h4>compare.json</h4>")
                parts.append(_compare_table(rnd["compare"]))
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
    links). Raises :class:`ReportError` for a missing path or one with no run directory in it.
    """
    page = render(collect(Path(path)), viewer)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
