"""HTML of the viewer's pages, rendered on the server (no build step, no external assets).

Everything that comes from a run directory (model output, tool results, task names) is
untrusted and goes through :func:`esc`; the server also sends a Content-Security-Policy
that allows no inline script and nothing from other origins.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from agentharness.core.episode import FORMAT_ERROR_PREFIX, TOOL_IMAGES_SUFFIX, ToolCallRecord
from agentharness.core.messages import ImagePart, Message, TextPart
from agentharness.store.schema import EpisodeRecord
from agentharness.view.index import EpisodeSummary, image_path_of

CSS = """
body{font-family:system-ui,sans-serif;margin:1.2em 2em;color:#222;font-size:14px}
a{color:#0b5cad;text-decoration:none}a:hover{text-decoration:underline}
h1{font-size:1.35em;margin:.2em 0 .6em}h2{font-size:1.1em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.92em}
td,th{border:1px solid #ddd;padding:.2em .45em;text-align:left;vertical-align:top}
th{background:#f3f3f3;white-space:nowrap}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.ok td.reward{background:#e8f6e8}tr.fail td.reward{background:#fbeaea}
form.filters{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:end;margin:.5em 0 1em}
form.filters label{display:flex;flex-direction:column;font-size:.85em;color:#555}
.note{color:#666;font-size:.9em}.warn{color:#8a5300}
.pager{margin:.6em 0}.pager a,.pager span{margin-right:1em}
.msg{border:1px solid #ddd;border-left:5px solid #999;border-radius:3px;margin:.5em 0;padding:.3em .6em;background:#fff}
.msg .head{font-size:.8em;color:#555;margin-bottom:.2em;display:flex;gap:.8em;flex-wrap:wrap}
.msg pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;font-size:.92em}
.msg.system{border-left-color:#777;background:#f6f6f6}.msg.prompt{border-left-color:#3a7bd5}
.msg.assistant{border-left-color:#2e9d4f}.msg.tool{border-left-color:#8e5fc2;background:#faf7fd}
.msg.tool.error{border-left-color:#c0392b;background:#fdf3f2}.msg.format-error{border-left-color:#c0392b;background:#fdf0ef}
.msg.nudge{border-left-color:#e08e0b;background:#fff8ea}.msg.tool-images{border-left-color:#8e5fc2}
.call{background:#f1f7f2;border:1px dashed #9bc7a6;padding:.2em .5em;margin:.3em 0}
.badge{display:inline-block;padding:0 .45em;border-radius:8px;font-size:.8em;background:#eee}
.badge.bad{background:#f5c6c1}.badge.good{background:#cdebd3}.badge.mark{background:#ffe1a8}
img.inline{max-width:min(100%,640px);display:block;margin:.3em 0;border:1px solid #ccc}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1.2em}.cols>div{min-width:0}
details summary{cursor:pointer;color:#0b5cad}
"""

# Filters submit as soon as a choice changes (the button stays for keyboards and no-JS).
JS = """
document.querySelectorAll('form.filters select').forEach(function (s) {
  s.addEventListener('change', function () { s.form.submit(); });
});
"""

SORT_COLUMNS: dict[str, str] = {
    "run": "run",
    "episode_id": "episode",
    "task": "task",
    "difficulty": "difficulty",
    "agent": "agent",
    "seed": "seed",
    "sample": "sample",
    "reward": "reward",
    "success": "success",
    "end_reason": "end reason",
    "turns": "turns",
    "tool_calls": "tool calls",
    "tool_errors": "tool errors",
    "format_errors": "format errors",
    "nudges": "nudges",
    "tokens": "tokens",
    "wall_s": "wall s",
}


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def url(route: str, /, **params: Any) -> str:
    """A link within the viewer; empty and ``None`` parameters are left out."""
    q = {k: v for k, v in params.items() if v not in (None, "")}
    return esc(route + ("?" + urlencode(q) if q else ""))


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>"
        '<link rel="stylesheet" href="/static/view.css">'
        '<script src="/static/view.js" defer></script></head><body>\n'
        f'<p class="note"><a href="/">all episodes</a></p>\n{body}\n</body></html>\n'
    )


def error_page(status: int, message: str) -> str:
    return page(f"{status}", f"<h1>{status}</h1><p>{esc(message)}</p>")


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


def _pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


# -- the episode list ------------------------------------------------------------------


def _select(name: str, label: str, options: Sequence[str], current: str) -> str:
    opts = ['<option value="">any</option>'] + [
        f'<option value="{esc(o)}"{" selected" if o == current else ""}>{esc(o)}</option>'
        for o in options
    ]
    return f'<label>{esc(label)}<select name="{name}">{"".join(opts)}</select></label>'


def runs_table(runs: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for r in runs:
        rows.append(
            "<tr>"
            f'<td><a href="{url("/", run=r["name"])}">{esc(r["name"])}</a></td>'
            f"<td>{esc(r['path'])}</td>"
            f'<td class="num">{r["episodes"]}</td>'
            f"<td>{esc(', '.join(r['tasks']))}</td><td>{esc(', '.join(r['agents']))}</td>"
            f'<td class="num">{_num(r["mean_reward"]) if r["episodes"] else ""}</td>'
            f'<td class="num">{_num(r["success_rate"], 2) if r["episodes"] else ""}</td>'
            "</tr>"
        )
    return (
        '<table id="runs"><thead><tr><th>run</th><th>path</th><th>episodes</th><th>tasks</th>'
        "<th>agents</th><th>mean reward</th><th>success</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def compare_form(names: Sequence[str]) -> str:
    if len(names) < 2:
        return ""

    def sel(name: str, chosen: str) -> str:
        opts = "".join(
            f'<option value="{esc(n)}"{" selected" if n == chosen else ""}>{esc(n)}</option>'
            for n in names
        )
        return f'<select name="{name}">{opts}</select>'

    return (
        '<form class="compare" action="/compare" method="get">Compare run '
        f"{sel('a', names[0])} with {sel('b', names[1])} on the instances they share "
        '<button type="submit">compare</button></form>'
    )


def filter_form(
    params: Mapping[str, str], options: Mapping[str, Sequence[str]], action: str = "/"
) -> str:
    fields = [
        _select("run", "run", options["run"], params.get("run", "")),
        _select("task", "task", options["task"], params.get("task", "")),
        _select("difficulty", "difficulty", options["difficulty"], params.get("difficulty", "")),
        _select("agent", "agent", options["agent"], params.get("agent", "")),
        _select("end_reason", "end reason", options["end_reason"], params.get("end_reason", "")),
        _select("success", "success", ["yes", "no"], params.get("success", "")),
        f'<label>reward ≥<input name="min_reward" size="5" value="{esc(params.get("min_reward", ""))}"></label>',
        f'<label>reward ≤<input name="max_reward" size="5" value="{esc(params.get("max_reward", ""))}"></label>',
        f'<label>episode id contains<input name="q" size="18" value="{esc(params.get("q", ""))}"></label>',
    ]
    hidden = "".join(
        f'<input type="hidden" name="{k}" value="{esc(params[k])}">'
        for k in ("sort", "desc", "per")
        if params.get(k)
    )
    return (
        f'<form class="filters" method="get" action="{esc(action)}">{"".join(fields)}{hidden}'
        '<button type="submit">filter</button>'
        f'<a href="{esc(action)}">clear</a></form>'
    )


def _sort_header(key: str, label: str, params: Mapping[str, str]) -> str:
    current, desc = params.get("sort", ""), params.get("desc", "") == "1"
    next_desc = "0" if current == key and desc else "1" if current == key else "0"
    if key in ("reward", "tokens", "wall_s", "turns") and current != key:
        next_desc = "1"  # biggest first is what one usually wants for these
    arrow = (" ▼" if desc else " ▲") if current == key else ""
    link = url("/", **{**params, "sort": key, "desc": next_desc, "page": ""})
    return f'<th><a href="{link}" data-sort="{key}">{esc(label)}{arrow}</a></th>'


def episode_link(row: EpisodeSummary) -> str:
    return url("/episode", run=row.run, id=row.episode_id)


def episodes_table(rows: Sequence[EpisodeSummary], params: Mapping[str, str]) -> str:
    head = "".join(_sort_header(k, v, params) for k, v in SORT_COLUMNS.items())
    body = []
    for r in rows:
        body.append(
            f'<tr class="{"ok" if r.success else "fail"}" data-episode="{esc(r.episode_id)}">'
            f"<td>{esc(r.run)}</td>"
            f'<td><a href="{episode_link(r)}">{esc(r.episode_id)}</a></td>'
            f'<td class="task">{esc(r.task)}</td><td class="difficulty">{esc(r.difficulty)}</td>'
            f'<td class="agent">{esc(r.agent)}</td><td class="num">{r.seed}</td>'
            f'<td class="num">{r.sample}</td><td class="num reward">{_num(r.reward)}</td>'
            f'<td class="success">{"yes" if r.success else "no"}</td>'
            f'<td class="end_reason">{esc(r.end_reason)}</td><td class="num">{r.turns}</td>'
            f'<td class="num">{r.tool_calls}</td><td class="num">{r.tool_errors}</td>'
            f'<td class="num">{r.format_errors}</td><td class="num">{r.nudges}</td>'
            f'<td class="num">{r.tokens}</td><td class="num">{_num(r.wall_s, 2)}</td></tr>'
        )
    return (
        f'<table id="episodes"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def pager(path: str, params: Mapping[str, str], page_no: int, pages: int, total: int) -> str:
    parts = [f'<span class="count">{total} episode(s) match; page {page_no} of {pages}</span>']
    if page_no > 1:
        parts.append(
            f'<a rel="prev" href="{url(path, **{**params, "page": page_no - 1})}">previous</a>'
        )
    if page_no < pages:
        parts.append(
            f'<a rel="next" href="{url(path, **{**params, "page": page_no + 1})}">next</a>'
        )
    return f'<div class="pager">{"".join(parts)}</div>'


# -- the transcript ---------------------------------------------------------------------


def message_kinds(messages: Sequence[Message]) -> list[str]:
    """What each message is: system, prompt, assistant, tool, tool-images, format-error, nudge.

    Everything a user says after the first assistant turn was written by the episode: the
    images a tool returned, a format error, or the task's feedback when no tool was called.
    """
    kinds: list[str] = []
    seen_assistant = False
    for m in messages:
        if m.role == "assistant":
            seen_assistant = True
            kinds.append("assistant")
        elif m.role in ("system", "tool"):
            kinds.append(m.role)
        elif not seen_assistant:
            kinds.append("prompt")
        elif m.text.startswith(FORMAT_ERROR_PREFIX):
            kinds.append("format-error")
        elif m.images and m.text.rstrip().endswith(TOOL_IMAGES_SUFFIX):
            kinds.append("tool-images")
        else:
            kinds.append("nudge")
    return kinds


_KIND_LABEL = {
    "system": "system",
    "prompt": "user (prompt)",
    "assistant": "assistant",
    "tool": "tool result",
    "tool-images": "tool images",
    "format-error": "format error",
    "nudge": "nudge (no tool call)",
}


def _image_src(part: ImagePart, run: str) -> str | None:
    u = part.image_url.url
    rel = image_path_of(u)
    if rel is not None:
        return url("/file", run=run, path=rel)
    if u.startswith("data:image/"):
        return esc(u)
    return None  # a remote URL: never fetched (no internet, no tracking)


def _content(m: Message, run: str) -> str:
    if m.content is None:
        return ""
    if isinstance(m.content, str):
        return f"<pre>{esc(m.content)}</pre>" if m.content else ""
    out = []
    for p in m.content:
        if isinstance(p, TextPart):
            out.append(f"<pre>{esc(p.text)}</pre>")
        else:
            src = _image_src(p, run)
            if src is None:
                out.append(
                    f'<p class="note">[remote image not loaded: {esc(p.image_url.url[:200])}]</p>'
                )
            else:
                out.append(f'<img class="inline" src="{src}" alt="image" loading="lazy">')
    return "".join(out)


def _arguments(raw: str) -> str:
    try:
        return _pretty_json(json.loads(raw))
    except json.JSONDecodeError:
        return raw


def transcript(record: EpisodeRecord, run: str) -> str:
    """Every message of the episode, marked by kind, with calls, results and step rewards."""
    calls: dict[str, ToolCallRecord] = {c.id: c for c in record.tool_calls}
    kinds = message_kinds(record.messages)
    out = []
    turn = 0
    for m, kind in zip(record.messages, kinds, strict=True):
        head = [f"<b>{esc(_KIND_LABEL[kind])}</b>"]
        classes = ["msg", kind]
        extra = ""
        if kind == "assistant":
            turn += 1
            head.append(f"turn {turn}")
            if turn <= len(record.step_rewards):
                head.append(f"step reward {_num(record.step_rewards[turn - 1])}")
            if m.reasoning_content:
                extra += f"<details><summary>reasoning</summary><pre>{esc(m.reasoning_content)}</pre></details>"
            for c in m.tool_calls or []:
                extra += (
                    f'<div class="call"><b>call</b> <code class="tool-name">{esc(c.function.name)}</code> '
                    f'<span class="note">{esc(c.id)}</span><pre>{esc(_arguments(c.function.arguments))}</pre></div>'
                )
        elif kind == "tool":
            rec = calls.get(m.tool_call_id or "")
            head.append(f"<code>{esc(m.name or '')}</code>")
            if m.outcome is not None and m.outcome.data is not None:
                extra += (
                    "<details><summary>result data</summary>"
                    f"<pre>{esc(_pretty_json(m.outcome.data))}</pre></details>"
                )
            if m.tool_call_id:
                head.append(f'<span class="note">{esc(m.tool_call_id)}</span>')
            if rec is not None:
                if rec.is_error:
                    classes.append("error")
                    head.append('<span class="badge bad">tool error</span>')
                if rec.step_reward is not None:
                    head.append(f"step reward {_num(rec.step_reward)}")
                if rec.metrics:
                    head.append(esc(", ".join(f"{k}={v:g}" for k, v in rec.metrics.items())))
        elif kind in ("format-error", "nudge"):
            head.append(f'<span class="badge mark">{esc(_KIND_LABEL[kind])}</span>')
        body = _content(m, run)
        spans = "".join(f"<span>{h}</span>" for h in head)
        out.append(
            f'<div class="{" ".join(classes)}" data-kind="{kind}"><div class="head">{spans}</div>'
            f"{body}{extra}</div>"
        )
    return f'<div class="transcript">{"".join(out)}</div>'


def _kv_table(items: Sequence[tuple[str, Any]], cls: str = "") -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in items)
    return f'<table class="{cls}">{rows}</table>'


def reward_block(record: EpisodeRecord) -> str:
    r = record.reward
    comps = "".join(
        f'<tr><td>{esc(c.name)}</td><td class="num">{_num(c.value)}</td>'
        f'<td class="num">{c.weight:g}</td><td>{esc(c.detail)}</td></tr>'
        for c in r.components
    )
    badge = (
        '<span class="badge good">success</span>'
        if r.success
        else '<span class="badge bad">failure</span>'
    )
    return (
        f'<div class="reward"><p>reward <b class="total">{_num(r.total)}</b> {badge}</p>'
        + (
            '<table class="components"><thead><tr><th>component</th><th>value</th><th>weight</th>'
            f"<th>detail</th></tr></thead><tbody>{comps}</tbody></table>"
            if comps
            else ""
        )
        + (f'<p class="explanation">{esc(r.explanation)}</p>' if r.explanation else "")
        + "</div>"
    )


def _time(ts: float) -> str:
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ts)


def episode_facts(record: EpisodeRecord) -> str:
    u, t = record.usage, record.timings
    outcome = [
        ("end reason", esc(record.end_reason)),
        ("turns", record.turns),
        ("tool calls", len(record.tool_calls)),
        ("tool errors", record.tool_errors),
        ("format errors", record.format_errors),
        ("nudges", record.nudges),
    ]
    if record.error:
        outcome.append(("error", f'<span class="warn">{esc(record.error)}</span>'))
    usage = [
        ("prompt tokens", u.prompt_tokens),
        ("completion tokens", u.completion_tokens),
        ("requests", u.requests),
        ("retries", u.retries),
        ("started", esc(_time(t.started_at))),
        ("wall", f"{t.wall_s:.3f} s"),
        ("agent", f"{t.agent_s:.3f} s"),
        ("environment", f"{t.env_s:.3f} s"),
    ]
    return (
        '<div class="cols"><div><h2>Outcome</h2>'
        + _kv_table(outcome, "outcome")
        + "</div><div><h2>Usage and timings</h2>"
        + _kv_table(usage, "usage")
        + "</div></div>"
    )


def instance_block(record: EpisodeRecord) -> str:
    inst = record.instance
    blocks: list[tuple[str, Any]] = [
        ("config (knobs)", inst.config),
        ("public data", inst.public),
        ("hidden ground truth", inst.hidden),
        (f"tools offered ({len(record.tools)})", record.tools),
    ]
    if inst.provenance:
        blocks.append(("provenance", inst.provenance))
    return "".join(
        f"<details><summary>{esc(title)}</summary><pre>{esc(_pretty_json(data))}</pre></details>"
        for title, data in blocks
    )


def episode_header(record: EpisodeRecord, run: str) -> str:
    inst = record.instance
    return (
        f'<p class="note">run <a href="{url("/", run=run)}">{esc(run)}</a> · task '
        f'<a href="{url("/", task=record.task)}">{esc(record.task)}</a> · difficulty {esc(record.difficulty)} · '
        f"seed {inst.seed} · sample {record.sample} · agent {esc(record.agent)} · instance "
        f"<code>{esc(inst.instance_id)}</code></p>"
    )


def episode_page(record: EpisodeRecord, run: str, others: Sequence[EpisodeSummary]) -> str:
    """The whole episode: facts, reward breakdown, instance, transcript, and the same instance elsewhere."""
    same = ""
    if others:
        iid = record.instance.instance_id
        items = []
        for o in others:
            item = (
                f'<li><a href="{episode_link(o)}">{esc(o.run)} · sample {o.sample} · {esc(o.agent)}</a> '
                f"reward {_num(o.reward)}"
            )
            if o.run != run or o.sample != record.sample:
                link = url("/compare", a=run, b=o.run, instance=iid, sa=record.sample, sb=o.sample)
                item += f' · <a class="side-by-side" href="{link}">side by side</a>'
            items.append(item + "</li>")
        links = "".join(items)
        same = f'<h2>This instance in the runs</h2><ul class="others">{links}</ul>'
    body = (
        f"<h1>{esc(record.episode_id)}</h1>"
        + episode_header(record, run)
        + "<h2>Reward</h2>"
        + reward_block(record)
        + episode_facts(record)
        + "<h2>Instance</h2>"
        + instance_block(record)
        + same
        + "<h2>Transcript</h2>"
        + transcript(record, run)
    )
    return page(f"{record.episode_id} · agentharness viewer", body)


def side_by_side(
    a: tuple[str, EpisodeRecord | None, Sequence[int]],
    b: tuple[str, EpisodeRecord | None, Sequence[int]],
    instance_id: str,
) -> str:
    """Two runs' episodes on one instance in two columns (``(run, record, its samples)`` each)."""
    cols = []
    for which, (run, record, samples) in (("a", a), ("b", b)):
        if record is None:
            cols.append(
                f'<div class="side" data-run="{esc(run)}"><h2>{esc(run)}</h2><p>no episode on this instance</p></div>'
            )
            continue
        other_params = {"a": a[0], "b": b[0], "instance": instance_id}
        picks = " ".join(
            f'<a href="{url("/compare", **{**other_params, "s" + which: s})}">{s}</a>'
            if s != record.sample
            else f"<b>{s}</b>"
            for s in samples
        )
        cols.append(
            f'<div class="side" data-run="{esc(run)}"><h2>{esc(run)} · '
            f'<a href="{url("/episode", run=run, id=record.episode_id)}">{esc(record.agent)}</a></h2>'
            f'<p class="note">samples: {picks}</p>'
            + reward_block(record)
            + _kv_table(
                [
                    ("end reason", esc(record.end_reason)),
                    ("turns", record.turns),
                    ("tool calls", len(record.tool_calls)),
                    ("tool errors", record.tool_errors),
                    ("format errors", record.format_errors),
                    ("tokens", record.usage.total_tokens),
                ]
            )
            + transcript(record, run)
            + "</div>"
        )
    return page(
        f"{a[0]} vs {b[0]} · agentharness viewer",
        f'<h1>{esc(a[0])} vs {esc(b[0])}</h1><p class="note">instance <code>{esc(instance_id)}</code> · '
        f'<a href="{url("/compare", a=a[0], b=b[0])}">all shared instances</a></p>'
        f'<div class="cols">{"".join(cols)}</div>',
    )


def compare_list(
    a: str,
    b: str,
    pairs: Sequence[Mapping[str, Any]],
    params: Mapping[str, str],
    tasks: Sequence[str],
    pager_html: str,
) -> str:
    """The instances two runs share, with each run's mean reward and the difference."""
    rows = []
    for p in pairs:
        link = url("/compare", a=a, b=b, instance=p["instance_id"])
        rows.append(
            f'<tr data-instance="{esc(p["instance_id"])}"><td><a href="{link}">{esc(p["instance_id"])}</a></td>'
            f'<td>{esc(p["task"])}</td><td>{esc(p["difficulty"])}</td><td class="num">{p["seed"]}</td>'
            f'<td class="num">{_num(p["reward_a"])}</td><td class="num">{_num(p["reward_b"])}</td>'
            f'<td class="num delta">{p["delta"]:+.3f}</td>'
            f'<td class="num">{p["success_a"]}/{p["n_a"]}</td><td class="num">{p["success_b"]}/{p["n_b"]}</td></tr>'
        )
    hidden = "".join(
        f'<input type="hidden" name="{k}" value="{esc(params[k])}">'
        for k in ("a", "b", "sort")
        if params.get(k)
    )
    form = (
        f'<form class="filters" method="get" action="/compare">{hidden}'
        + _select("task", "task", tasks, params.get("task", ""))
        + '<button type="submit">filter</button></form>'
    )
    order = params.get("sort", "delta")
    sort_links = " ".join(
        f'<a href="{url("/compare", **{**params, "sort": key, "page": ""})}">{label}</a>'
        if key != order
        else f"<b>{label}</b>"
        for key, label in (
            ("delta", "biggest change first"),
            ("worse", "largest drop first"),
            ("better", "largest gain first"),
            ("instance", "instance"),
        )
    )
    return page(
        f"{a} vs {b} · agentharness viewer",
        f"<h1>{esc(a)} vs {esc(b)}: shared instances</h1>"
        f'<p class="note">mean reward over each run\'s samples; delta = {esc(b)} − {esc(a)}. Sort: {sort_links}</p>'
        + form
        + pager_html
        + '<table id="pairs"><thead><tr><th>instance</th><th>task</th><th>difficulty</th><th>seed</th>'
        f"<th>reward {esc(a)}</th><th>reward {esc(b)}</th><th>delta</th><th>successes {esc(a)}</th>"
        f"<th>successes {esc(b)}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>",
    )
