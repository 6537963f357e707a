"""The viewer's routes and its HTTP server (the standard library's, so no extra is needed).

Routes (all GET):

* ``/`` — runs, then their episodes in a table that filters (``run``, ``task``,
  ``difficulty``, ``agent``, ``end_reason``, ``success=yes|no``, ``min_reward``,
  ``max_reward``, ``q`` = episode id substring), sorts (``sort=<column>``, ``desc=1``) and
  paginates (``page``, ``per``);
* ``/episode?run=R&id=E`` — one episode in full;
* ``/compare?a=R1&b=R2`` — the instances two runs share, paired; with
  ``&instance=I[&sa=N&sb=M]`` the two episodes side by side;
* ``/file?run=R&path=images/x.png`` — an image of a run (only files inside the run);
* ``/static/view.css``, ``/static/view.js``, ``/api/episodes`` (the filtered page as JSON).

:meth:`ViewerApp.handle` is a pure function of (path, query) to a response, so the
routes are tested without sockets; :func:`make_server` puts it behind
``ThreadingHTTPServer``.
"""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentharness.view import pages
from agentharness.view.index import IMAGE_TYPES, EpisodeSummary, RunIndex, open_runs

PER_PAGE = (25, 50, 100, 200)
DEFAULT_PER_PAGE = 50
# No inline script, nothing from other origins: run directories are untrusted input.
CSP = (
    "default-src 'none'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


class BadRequest(ValueError):
    """A query the viewer cannot answer (bad number, unknown run); answered with 400/404."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def _html(text: str, status: int = 200) -> Response:
    return Response(status, "text/html; charset=utf-8", text.encode())


def _float(params: Mapping[str, str], name: str) -> float | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadRequest(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value):
        raise BadRequest(f"{name} must be a finite number, got {raw!r}")
    return value


def _int(params: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    raw = params.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum:
        raise BadRequest(f"{name} must be at least {minimum}, got {value}")
    return value


FILTERS = ("run", "task", "difficulty", "agent", "end_reason")


def filter_rows(rows: Sequence[EpisodeSummary], params: Mapping[str, str]) -> list[EpisodeSummary]:
    """The rows that pass every filter in ``params`` (see the module docstring)."""
    wanted = {k: params[k] for k in FILTERS if params.get(k)}
    success = params.get("success", "")
    if success not in ("", "yes", "no"):
        raise BadRequest(f"success must be yes or no, got {success!r}")
    lo, hi = _float(params, "min_reward"), _float(params, "max_reward")
    q = params.get("q", "").strip().lower()
    out = []
    for r in rows:
        if any(getattr(r, k) != v for k, v in wanted.items()):
            continue
        if success and r.success != (success == "yes"):
            continue
        if lo is not None and r.reward < lo:
            continue
        if hi is not None and r.reward > hi:
            continue
        if q and q not in r.episode_id.lower():
            continue
        out.append(r)
    return out


def sort_rows(rows: list[EpisodeSummary], params: Mapping[str, str]) -> list[EpisodeSummary]:
    key = params.get("sort", "")
    if not key:
        return rows
    if key not in pages.SORT_COLUMNS:
        raise BadRequest(f"cannot sort by {key!r}; one of: {', '.join(pages.SORT_COLUMNS)}")
    # Ties keep file order, so paging through a sorted table is stable.
    return sorted(rows, key=lambda r: getattr(r, key), reverse=params.get("desc") == "1")


def paginate(rows: Sequence[Any], params: Mapping[str, str]) -> tuple[list[Any], int, int, int]:
    """(the page's rows, page number, number of pages, per page)."""
    per = _int(params, "per", DEFAULT_PER_PAGE)
    if per not in PER_PAGE:
        raise BadRequest(f"per must be one of {', '.join(map(str, PER_PAGE))}, got {per}")
    pages_n = max(1, math.ceil(len(rows) / per))
    page_no = min(_int(params, "page", 1), pages_n)
    start = (page_no - 1) * per
    return list(rows[start : start + per]), page_no, pages_n, per


class ViewerApp:
    """The viewer over a fixed set of indexed runs."""

    def __init__(self, runs: Sequence[RunIndex]) -> None:
        self.runs = {r.name: r for r in runs}
        self._overview_cache: (
            tuple[tuple[int, ...], dict[str, list[str]], list[dict[str, Any]]] | None
        ) = None
        self.routes: dict[str, Callable[[dict[str, str]], Response]] = {
            "/": self.index,
            "/episode": self.episode,
            "/compare": self.compare,
            "/file": self.file,
            "/api/episodes": self.api_episodes,
            "/favicon.ico": lambda _: Response(204, "image/x-icon", b""),
            "/static/view.css": lambda _: Response(
                200, "text/css; charset=utf-8", pages.CSS.encode()
            ),
            "/static/view.js": lambda _: Response(
                200, "text/javascript; charset=utf-8", pages.JS.encode()
            ),
        }

    @classmethod
    def from_paths(cls, paths: Sequence[Path], *, index: bool = True) -> ViewerApp:
        """The viewer of ``paths``; with ``index=False`` call :meth:`index_in_background`."""
        return cls(open_runs(list(paths), index=index))

    def index_in_background(self) -> threading.Thread:
        """Read every run's log in a daemon thread; pages show what is indexed meanwhile."""

        def work() -> None:
            for run in self.runs.values():
                run.refresh()

        thread = threading.Thread(target=work, name="view-index", daemon=True)
        thread.start()
        return thread

    def handle(self, target: str) -> Response:
        """The response to a GET of ``target`` (path and query string)."""
        parts = urlsplit(target)
        params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        route = self.routes.get(parts.path)
        if route is None:
            return _html(pages.error_page(404, f"no page {parts.path}"), 404)
        try:
            response = route(params)
        except BadRequest as e:
            return _html(pages.error_page(e.status, str(e)), e.status)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    # -- helpers ------------------------------------------------------------------------
    def _run(self, name: str) -> RunIndex:
        run = self.runs.get(name)
        if run is None:
            raise BadRequest(
                f"no run named {name!r}; the viewer shows: {', '.join(self.runs)}", 404
            )
        return run

    def all_rows(self) -> list[EpisodeSummary]:
        return [row for run in self.runs.values() for row in run.rows()]

    def _filtered(
        self, params: Mapping[str, str]
    ) -> tuple[list[EpisodeSummary], list[EpisodeSummary]]:
        if params.get("run"):
            self._run(params["run"])
        rows = self.all_rows()
        return rows, sort_rows(filter_rows(rows, params), params)

    # -- routes -------------------------------------------------------------------------
    def _overview(
        self, rows: list[EpisodeSummary]
    ) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
        """Filter choices and per-run figures, recomputed only when some run changed."""
        key = tuple(len(run.rows()) for run in self.runs.values())
        if self._overview_cache is not None and self._overview_cache[0] == key:
            return self._overview_cache[1], self._overview_cache[2]
        options = {
            "run": list(self.runs),
            **{k: sorted({str(getattr(r, k)) for r in rows}) for k in FILTERS if k != "run"},
        }
        stats = []
        for run in self.runs.values():
            rr = run.rows()
            stats.append(
                {
                    "name": run.name,
                    "path": str(run.path),
                    "episodes": len(rr),
                    "tasks": sorted({r.task for r in rr}),
                    "agents": sorted({r.agent for r in rr}),
                    "mean_reward": statistics.fmean(r.reward for r in rr) if rr else 0.0,
                    "success_rate": statistics.fmean(float(r.success) for r in rr) if rr else 0.0,
                }
            )
        self._overview_cache = (key, options, stats)
        return options, stats

    def index(self, params: dict[str, str]) -> Response:
        rows, matched = self._filtered(params)
        shown, page_no, pages_n, _ = paginate(matched, params)
        options, run_stats = self._overview(rows)
        skipped = [s for run in self.runs.values() for s in run.skipped]
        notes = ""
        busy = [run for run in self.runs.values() if run.indexing]
        if busy:
            done = ", ".join(f"{run.name} {run.progress:.0%}" for run in busy)
            notes += (
                f'<p class="warn" id="indexing">Still reading the logs ({pages.esc(done)}): '
                "the table shows the episodes indexed so far; reload for more.</p>"
            )
        for run in self.runs.values():
            if run.error:
                notes += f'<p class="warn">{pages.esc(run.error)}</p>'
        if skipped:
            items = "".join(f"<li>{pages.esc(s)}</li>" for s in skipped[:20])
            more = f"<li>... {len(skipped) - 20} more</li>" if len(skipped) > 20 else ""
            notes += (
                f'<details class="warn"><summary>{len(skipped)} unreadable line(s) skipped'
                f"</summary><ul>{items}{more}</ul></details>"
            )
        kept = {k: v for k, v in params.items() if k != "page"}
        body = (
            "<h1>agentharness viewer</h1>"
            + pages.runs_table(run_stats)
            + pages.compare_form(list(self.runs))
            + notes
            + "<h2>Episodes</h2>"
            + pages.filter_form(params, options)
            + pages.pager("/", kept, page_no, pages_n, len(matched))
            + pages.episodes_table(shown, params)
            + pages.pager("/", kept, page_no, pages_n, len(matched))
        )
        return _html(pages.page("agentharness viewer", body))

    def api_episodes(self, params: dict[str, str]) -> Response:
        _, matched = self._filtered(params)
        shown, page_no, pages_n, per = paginate(matched, params)
        data = {
            "total": len(matched),
            "page": page_no,
            "pages": pages_n,
            "per": per,
            "episodes": [
                {k: v for k, v in vars(r).items() if k not in ("offset", "lineno")} for r in shown
            ],
        }
        return Response(200, "application/json", json.dumps(data).encode())

    def episode(self, params: dict[str, str]) -> Response:
        run = self._run(params.get("run", ""))
        episode_id = params.get("id", "")
        record = run.episode(episode_id)
        if record is None:
            raise BadRequest(f"run {run.name} has no readable episode {episode_id!r}", 404)
        instance_id = record.instance.instance_id
        others = [r for r in self.all_rows() if r.instance_id == instance_id]
        return _html(pages.episode_page(record, run.name, others))

    def compare(self, params: dict[str, str]) -> Response:
        if not params.get("a") or not params.get("b"):
            raise BadRequest("compare needs two runs: /compare?a=RUN&b=RUN")
        a, b = self._run(params["a"]), self._run(params["b"])
        if params.get("instance"):
            return self._side_by_side(a, b, params)
        by_a: dict[str, list[EpisodeSummary]] = defaultdict(list)
        by_b: dict[str, list[EpisodeSummary]] = defaultdict(list)
        for r in a.rows():
            by_a[r.instance_id].append(r)
        for r in b.rows():
            by_b[r.instance_id].append(r)
        task = params.get("task", "")
        pairs = []
        for iid, ra in by_a.items():
            rb = by_b.get(iid)
            if not rb or (task and ra[0].task != task):
                continue
            mean_a = statistics.fmean(r.reward for r in ra)
            mean_b = statistics.fmean(r.reward for r in rb)
            pairs.append(
                {
                    "instance_id": iid,
                    "task": ra[0].task,
                    "difficulty": ra[0].difficulty,
                    "seed": ra[0].seed,
                    "reward_a": mean_a,
                    "reward_b": mean_b,
                    "delta": mean_b - mean_a,
                    "success_a": sum(r.success for r in ra),
                    "success_b": sum(r.success for r in rb),
                    "n_a": len(ra),
                    "n_b": len(rb),
                }
            )
        order = params.get("sort", "delta")
        keys: dict[str, Callable[[dict[str, Any]], Any]] = {
            "delta": lambda p: -abs(p["delta"]),
            "worse": lambda p: p["delta"],
            "better": lambda p: -p["delta"],
            "instance": lambda p: (p["task"], p["seed"], p["instance_id"]),
        }
        if order not in keys:
            raise BadRequest(f"sort must be one of {', '.join(keys)}, got {order!r}")
        pairs.sort(key=keys[order])
        shown, page_no, pages_n, _ = paginate(pairs, params)
        tasks = sorted({rs[0].task for rs in by_a.values()} & {rs[0].task for rs in by_b.values()})
        kept = {k: v for k, v in params.items() if k != "page"}
        pager = pages.pager("/compare", kept, page_no, pages_n, len(pairs)).replace(
            "episode(s) match", "shared instance(s)"
        )
        return _html(pages.compare_list(a.name, b.name, shown, params, tasks, pager))

    def _side_by_side(self, a: RunIndex, b: RunIndex, params: dict[str, str]) -> Response:
        instance_id = params["instance"]
        sides = []
        for run, key in ((a, "sa"), (b, "sb")):
            rows = sorted(
                (r for r in run.rows() if r.instance_id == instance_id), key=lambda r: r.sample
            )
            samples = [r.sample for r in rows]
            chosen = None
            if rows:
                wanted = _int(params, key, rows[0].sample, minimum=0)
                chosen = next((r for r in rows if r.sample == wanted), rows[0])
            record = run.episode(chosen.episode_id) if chosen else None
            sides.append((run.name, record, samples))
        if sides[0][1] is None and sides[1][1] is None:
            raise BadRequest(
                f"neither {a.name} nor {b.name} has an episode on {instance_id!r}", 404
            )
        return _html(pages.side_by_side(sides[0], sides[1], instance_id))

    def file(self, params: dict[str, str]) -> Response:
        run = self._run(params.get("run", ""))
        path = run.file(params.get("path", ""))
        if path is None:
            raise BadRequest("no such image in this run", 404)
        return Response(200, IMAGE_TYPES[path.suffix.lower()], path.read_bytes())


class _Handler(BaseHTTPRequestHandler):
    app: ViewerApp
    server_version = "agentharness-view"

    def do_GET(self) -> None:
        self._respond(head=False)

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def _respond(self, head: bool) -> None:
        try:
            response = self.app.handle(self.path)
        except Exception as e:  # a bug on one page must not take the viewer down
            response = _html(pages.error_page(500, f"{type(e).__name__}: {e}"), 500)
        self.send_response(response.status, HTTPStatus(response.status).phrase)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for k, v in response.headers.items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)


def make_server(
    app: ViewerApp, host: str = "127.0.0.1", port: int = 8765, *, verbose: bool = False
) -> ThreadingHTTPServer:
    """An HTTP server for ``app`` (``port=0`` picks a free port); call ``serve_forever()``."""
    handler = type("ViewerHandler", (_Handler,), {"app": app})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.verbose = verbose  # type: ignore[attr-defined]
    return server
