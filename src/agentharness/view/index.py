"""The viewer's index of run directories: one small summary and byte offset per episode.

A 10,000-episode run is never held in memory: :meth:`RunIndex.refresh` reads
``episodes.jsonl`` once (through :meth:`RunDir.scan <agentharness.store.run.RunDir.scan>`),
keeping only the fields the tables filter and sort on plus where each line starts; an
episode page re-reads its one line with :meth:`RunDir.episode_at`. A run still being
written is picked up incrementally: each request reads only the bytes appended since.

Run directories are untrusted input: the log files and every image must resolve inside
the run directory (symlinks included), or the viewer refuses them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from agentharness.core.instance import Instance
from agentharness.core.messages import ImagePart, ImageURL
from agentharness.store.reader import named_run_dirs
from agentharness.store.run import (
    EPISODES,
    FILE_PREFIX,
    RUN_JSON,
    LineRef,
    RunDir,
    RunDirError,
)
from agentharness.store.schema import EpisodeRecord

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


@dataclass(frozen=True)
class EpisodeSummary:
    """What the episode tables show, filter and sort on, and where the full line is."""

    run: str
    offset: int
    lineno: int
    episode_id: str
    instance_id: str
    task: str
    difficulty: str
    agent: str
    seed: int
    sample: int
    reward: float
    success: bool
    end_reason: str
    turns: int
    tool_calls: int
    tool_errors: int
    format_errors: int
    nudges: int
    tokens: int
    wall_s: float


class _RewardFields(BaseModel):
    model_config = ConfigDict(extra="ignore")
    total: float
    success: bool


class _CallFields(BaseModel):
    model_config = ConfigDict(extra="ignore")
    is_error: bool = False


class _UsageFields(BaseModel):
    model_config = ConfigDict(extra="ignore")
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _TimingFields(BaseModel):
    model_config = ConfigDict(extra="ignore")
    wall_s: float = 0.0


class _SummaryFields(BaseModel):
    """The part of an episode record the index validates (messages are left unread)."""

    model_config = ConfigDict(extra="ignore")
    episode_id: str
    sample: int
    agent: str
    instance: Instance
    reward: _RewardFields
    end_reason: str
    turns: int
    tool_calls: list[_CallFields]
    format_errors: int = 0
    nudges: int = 0
    usage: _UsageFields
    timings: _TimingFields


def _summary(run: str, ref: LineRef) -> EpisodeSummary | None:
    if ref.data is None:
        return None
    try:
        f = _SummaryFields.model_validate(ref.data)
    except ValidationError:
        return None
    inst = f.instance
    return EpisodeSummary(
        run=run,
        offset=ref.offset,
        lineno=ref.lineno,
        episode_id=f.episode_id,
        instance_id=inst.instance_id,
        task=inst.task,
        difficulty=inst.difficulty,
        agent=f.agent,
        seed=inst.seed,
        sample=f.sample,
        reward=f.reward.total,
        success=f.reward.success,
        end_reason=f.end_reason,
        turns=f.turns,
        tool_calls=len(f.tool_calls),
        tool_errors=sum(c.is_error for c in f.tool_calls),
        format_errors=f.format_errors,
        nudges=f.nudges,
        tokens=f.usage.prompt_tokens + f.usage.completion_tokens,
        wall_s=f.timings.wall_s,
    )


def _inside(root: Path, path: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a symlink loop
        return False


class RunIndex:
    """One run directory, indexed by episode: summaries in file order and an id lookup."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = Path(path)
        self.root = self.path.resolve()
        self.run = RunDir(self.path)
        self.run.check()
        for log in (EPISODES, RUN_JSON):
            if (self.path / log).exists() and not _inside(self.root, self.path / log):
                raise RunDirError(
                    f"{self.path / log} points outside its run directory; refusing to read it"
                )
        self._rows: list[EpisodeSummary] = []
        self._by_id: dict[str, EpisodeSummary] = {}
        self._end = 0
        self._lineno = 1
        self._size = 0
        self.skipped: list[str] = []
        self.error: str | None = None
        self._lock = threading.Lock()  # guards the rows readers see
        self._scanning = threading.Lock()  # one reader of the file at a time

    @property
    def indexing(self) -> bool:
        """Whether the file is being read right now (the rows are then a prefix of the run)."""
        return self._scanning.locked()

    @property
    def progress(self) -> float:
        """The fraction of ``episodes.jsonl`` indexed (1.0 when up to date)."""
        return min(1.0, self._end / self._size) if self._size else 1.0

    def refresh(self) -> None:
        """Index the lines appended since the last call (all of them the first time).

        While another thread is reading the file this returns at once, so requests are
        answered from what is indexed so far instead of waiting for a large first scan.
        """
        if not self._scanning.acquire(blocking=False):
            return
        try:
            self._scan()
        except RunDirError as e:  # a newer schema: say so on the page, stop reading
            self.error = str(e)
        finally:
            self._scanning.release()

    def _scan(self) -> None:
        if self.error is not None:
            return
        try:
            self._size = self.run.episodes_path.stat().st_size
        except OSError:
            return
        if self._size == self._end:
            return
        if self._size < self._end:  # rewritten (filter, write_all): start over
            with self._lock:
                self._rows, self._by_id, self.skipped = [], {}, []
            self._end, self._lineno = 0, 1
        batch: list[EpisodeSummary] = []
        for ref in self.run.scan(self._end, self._lineno):
            row = _summary(self.name, ref)
            if row is not None:
                batch.append(row)
            else:
                what = "not an episode record" if ref.data is not None else "corrupt or truncated"
                self.skipped.append(f"{self.run.episodes_path}:{ref.lineno}: {what}")
            self._end, self._lineno = ref.end, ref.lineno + 1
            if len(batch) >= 500:  # let readers see progress during a long first scan
                self._commit(batch)
                batch = []
        self._commit(batch)

    def _commit(self, batch: list[EpisodeSummary]) -> None:
        with self._lock:
            self._rows.extend(batch)
            for row in batch:
                self._by_id.setdefault(row.episode_id, row)

    def rows(self) -> list[EpisodeSummary]:
        self.refresh()
        with self._lock:
            return list(self._rows)

    def summary(self, episode_id: str) -> EpisodeSummary | None:
        self.refresh()
        with self._lock:
            return self._by_id.get(episode_id)

    def episode(self, episode_id: str) -> EpisodeRecord | None:
        """The full record of ``episode_id`` (one line read from disk), or ``None``."""
        row = self.summary(episode_id)
        if row is None:
            return None
        return self.run.episode_at(row.offset, row.lineno)

    def info(self) -> dict[str, Any]:
        try:
            info = self.run.run_info()
        except (OSError, ValueError):
            return {}
        return info if isinstance(info, dict) else {}

    def file(self, relative: str) -> Path | None:
        """An image file of this run named relative to it; ``None`` if it is not one.

        The store's own check decides (:meth:`RunDir.image_path`): the resolved path,
        symlinks followed, must be a file under the run's ``images/``.
        """
        if not relative or "\x00" in relative:
            return None
        part = ImagePart(image_url=ImageURL(url=FILE_PREFIX + relative))
        try:
            path = self.run.image_path(part)
        except (RunDirError, OSError, RuntimeError):  # outside, missing, or a symlink loop
            return None
        if path is None or path.suffix.lower() not in IMAGE_TYPES:
            return None
        return path


def image_path_of(url: str) -> str | None:
    """The run-relative path of an image URL stored in a log (``file:images/x.png``), if it is one."""
    return url[len(FILE_PREFIX) :] if url.startswith(FILE_PREFIX) else None


def open_runs(paths: list[Path], *, index: bool = True) -> list[RunIndex]:
    """Every run directory in ``paths`` (a run, or a loop directory holding runs).

    Runs are named as ``bootcamp report --html`` names them (the directory name, or the
    path relative to a loop directory), so the report's links find them. Unusable paths
    raise :class:`~agentharness.store.run.RunDirError`. With ``index`` each is read now (a
    newer schema is then an error too); without, call
    :meth:`RunIndex.refresh` later (``bootcamp view`` does it in a background thread).
    """
    runs: list[RunIndex] = []
    for name, d in named_run_dirs(paths):
        run = RunIndex(name, d)
        if index:
            run.refresh()
            if run.error:
                raise RunDirError(run.error)
        runs.append(run)
    return runs
