"""Run directories: ``run.json``, ``episodes.jsonl`` and ``images/``.

Episodes are appended one line each as they finish and flushed to disk at once, so a
killed run loses nothing finished. A crash can leave a truncated last line; readers
skip it with a warning and writers cut it off before appending, so the file stays
valid JSONL. Inline PNG images are stored once under ``images/<sha256>.png`` and the
message refers to them as ``file:images/<sha256>.png``.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from pydantic import ValidationError

from agentharness.core.messages import ImagePart, ImageURL, Message
from agentharness.store.schema import SCHEMA_VERSION, EpisodeRecord

EPISODES = "episodes.jsonl"
RUN_JSON = "run.json"
IMAGES = "images"
FILE_PREFIX = "file:"


class EncodedRecord(NamedTuple):
    """One episode's log line (UTF-8, newline-terminated) and its images by file name."""

    episode_id: str
    line: bytes
    images: dict[str, bytes]


class RunDirError(ValueError):
    """Stored input that cannot be used: the one error for unusable runs and instance files.

    A missing or foreign directory, a run with nothing readable in it, a damaged
    ``run.json``, an episode log from a newer agentharness, an image reference that leaves
    the run, an instances file with no instance in it. The message says what is wrong and
    how to fix it; ``bootcamp`` prints it as one line.
    """


class CorruptLineWarning(UserWarning):
    """A line of a log or instances file that was skipped (corrupt, truncated or foreign)."""


@contextmanager
def atomic_open(path: Path) -> Iterator[TextIO]:
    """A text file (UTF-8) written to a temporary file renamed over ``path`` when the block
    ends without an error: a crash or an exception leaves the old file or the new one, never
    half of one. A ``path`` that is not a regular file (``/dev/stdout``, a pipe) is written
    through: renaming over it would replace it."""
    if path.exists() and not path.is_file():
        with open(path, "w", encoding="utf-8") as f:
            yield f
        return
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            yield f
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_open`."""
    with atomic_open(path) as f:
        f.write(text)


@dataclass(frozen=True)
class LineRef:
    """One complete line of ``episodes.jsonl``: where it is and its JSON (``None`` if corrupt)."""

    offset: int
    end: int
    lineno: int
    data: dict[str, Any] | None


class RunDir:
    """A run directory on disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @property
    def episodes_path(self) -> Path:
        return self.path / EPISODES

    # -- writing --------------------------------------------------------------------
    def create(self, run_info: dict[str, Any]) -> None:
        """Create the directory and write ``run.json`` (kept from the first run on resume)."""
        if self.path.exists() and not self.path.is_dir():
            raise RunDirError(f"{self.path} exists and is not a directory; choose another --out")
        self.path.mkdir(parents=True, exist_ok=True)
        previous = self.run_info()
        if previous:
            previous["invocations"] = [*previous.get("invocations", []), run_info]
            self._write_run_json(previous)
        else:
            self._write_run_json({**run_info, "invocations": [run_info]})
        self.episodes_path.touch()  # an empty run is a run: report and resume read it
        self._repair_tail()

    def _write_run_json(self, info: dict[str, Any]) -> None:
        atomic_write_text(self.path / RUN_JSON, json.dumps(info, indent=2))

    def append(self, record: EpisodeRecord) -> None:
        """Append one finished episode and flush it to disk."""
        self.append_encoded([self.encode(record)])

    @staticmethod
    def encode(record: EpisodeRecord) -> EncodedRecord:
        """The log line of ``record`` and the images it refers to, ready to append.

        Encoding needs no access to the directory, so it can happen in another process
        (a Ray worker) while only :meth:`append_encoded` touches the disk.
        """
        images: dict[str, bytes] = {}
        messages = [
            RunDir._externalize_images(m, images) if isinstance(m.content, list) else m
            for m in record.messages
        ]
        if images:
            record = record.model_copy(update={"messages": messages})
        # pydantic's own JSON is ~30x faster than json.dumps of model_dump, but it writes a
        # NaN or infinity as null, which would not read back into a float field; a line
        # with any null takes the json module's way, which writes NaN as before.
        line = record.model_dump_json(exclude_none=True).encode("utf-8")
        if b"null" in line:
            data = record.model_dump(mode="json", exclude_none=True)
            line = json.dumps(data, separators=(",", ":")).encode("utf-8")
        return EncodedRecord(record.episode_id, line + b"\n", images)

    def append_encoded(self, batch: list[EncodedRecord]) -> None:
        """Append finished episodes with one flush to disk for the whole batch.

        Images are written before the lines that refer to them, so a crash never leaves a
        line pointing at a missing file.
        """
        if not batch:
            return
        for encoded in batch:
            for name, png in encoded.images.items():
                target = self.path / IMAGES / name
                if not target.exists():
                    target.parent.mkdir(exist_ok=True)
                    target.write_bytes(png)
        with open(self.episodes_path, "ab") as f:
            f.write(b"".join(e.line for e in batch))
            f.flush()
            os.fsync(f.fileno())

    def write_all(self, records: list[EpisodeRecord], run_info: dict[str, Any]) -> None:
        """Write a whole derived run (filter output and the like)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._write_run_json(run_info)
        if self.episodes_path.exists():
            self.episodes_path.unlink()
        self.episodes_path.touch()
        for i in range(0, len(records), 256):
            self.append_encoded([self.encode(r) for r in records[i : i + 256]])

    @staticmethod
    def _externalize_images(message: Message, images: dict[str, bytes]) -> Message:
        """``message`` with inline PNGs replaced by file references; the PNGs go to ``images``."""
        if not isinstance(message.content, list):
            return message
        parts: list[Any] = []
        for part in message.content:
            png = part.png_bytes() if isinstance(part, ImagePart) else None
            if png is not None and isinstance(part, ImagePart):
                name = hashlib.sha256(png).hexdigest()[:32] + ".png"
                images[name] = png
                url = ImageURL(url=f"{FILE_PREFIX}{IMAGES}/{name}", detail=part.image_url.detail)
                part = part.model_copy(update={"image_url": url})
            parts.append(part)
        return message.model_copy(update={"content": parts})

    def _repair_tail(self) -> None:
        """Cut a truncated last line left by a crash, so appends stay valid JSONL."""
        p = self.episodes_path
        if not p.exists() or p.stat().st_size == 0:
            return
        with open(p, "rb+") as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b"\n":
                return
            data = p.read_bytes()
            cut = data.rfind(b"\n") + 1
            warnings.warn(
                f"{p}: dropped a truncated last line ({len(data) - cut} bytes) left by an interrupted run",
                CorruptLineWarning,
                stacklevel=3,
            )
            f.truncate(cut)

    # -- reading --------------------------------------------------------------------
    def run_info(self) -> dict[str, Any]:
        """``run.json``, or ``{}`` when there is none; a damaged one is a clear error."""
        p = self.path / RUN_JSON
        if not p.exists():
            return {}
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            raise RunDirError(
                f"{p} is unreadable ({type(e).__name__}); repair or delete it "
                f"(the episodes are in {EPISODES}, which it does not hold)"
            ) from None
        if not isinstance(data, dict):
            raise RunDirError(
                f"{p} holds {type(data).__name__}, not an object; repair or delete it"
            )
        return data

    def check(self) -> None:
        if not self.path.exists():
            raise RunDirError(f"run directory {self.path} does not exist")
        if not self.path.is_dir():
            raise RunDirError(
                f"{self.path} is not a directory; pass a run directory made by `bootcamp eval`"
            )
        if not self.episodes_path.exists():
            raise RunDirError(
                f"{self.path} has no {EPISODES}; it is not a run directory (make one with `bootcamp eval --out`)"
            )
        if not self.episodes_path.is_file():
            raise RunDirError(
                f"{self.episodes_path} is not a file; move it away (a run's episodes are one "
                "JSONL file)"
            )

    def episodes(
        self,
        *,
        resolve_images: bool = False,
        on_skip: Callable[[str], None] | None = None,
    ) -> Iterator[EpisodeRecord]:
        """Every readable episode, in file order.

        A corrupt or foreign line (or one whose image is missing) is skipped and reported
        to ``on_skip`` as a one-line message; without ``on_skip`` as a
        :class:`CorruptLineWarning`. Callers reading whole runs want
        :func:`agentharness.store.load_runs`, which also checks the input as a whole.
        """
        self.check()
        skip = on_skip or _warn_skipped
        with open(self.episodes_path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                if not raw.strip():
                    continue
                where = f"{self.episodes_path}:{lineno}"
                record = self._parse_line(raw, where, skip)
                if record is None:
                    continue
                if resolve_images:
                    try:
                        messages = [self._inline_images(m) for m in record.messages]
                    except (RunDirError, OSError) as e:
                        skip(f"{where}: skipped episode {record.episode_id}: {e}")
                        continue
                    record = record.model_copy(update={"messages": messages})
                yield record

    def scan(self, start: int = 0, first_lineno: int = 1) -> Iterator[LineRef]:
        """Each complete line from byte ``start`` with its offsets and parsed JSON, unvalidated.

        For indexing large runs: callers keep the offsets and read single episodes later
        with :meth:`episode_at`. Blank lines are passed over; a corrupt line comes back with
        ``data=None`` (no warning: the caller reports it). A last line without its newline
        may still be being written, so it is not returned; scan again from the last ``end``.
        """
        self.check()
        offset, lineno = start, first_lineno
        with open(self.episodes_path, "rb") as f:
            f.seek(start)
            for raw in f:
                if not raw.endswith(b"\n"):
                    break
                end = offset + len(raw)
                if raw.strip():
                    try:
                        parsed = json.loads(raw.decode("utf-8"))
                    except (UnicodeDecodeError, ValueError, RecursionError):
                        parsed = None
                    data = parsed if isinstance(parsed, dict) else None
                    if data is not None:
                        self._check_version(data, f"{self.episodes_path}:{lineno}")
                    yield LineRef(offset, end, lineno, data)
                offset, lineno = end, lineno + 1

    def episode_at(self, offset: int, lineno: int = 0) -> EpisodeRecord | None:
        """The episode on the line starting at byte ``offset`` (from :meth:`scan`), else ``None``."""
        self.check()
        with open(self.episodes_path, "rb") as f:
            f.seek(offset)
            raw = f.readline()
        return self._parse_line(raw, f"{self.episodes_path}:{lineno}", None)

    @staticmethod
    def _check_version(data: dict[str, Any], where: str) -> None:
        version = data.get("schema_version")
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise RunDirError(
                f"{where}: episode schema v{version} is newer than this agentharness (v{SCHEMA_VERSION}); upgrade it"
            )

    def _parse_line(
        self, raw: bytes, where: str, skip: Callable[[str], None] | None
    ) -> EpisodeRecord | None:
        """The record on one line, or ``None`` (said to ``skip``, if given, with the reason)."""
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            if skip is not None:
                what = (
                    "line that is not UTF-8"
                    if isinstance(e, UnicodeDecodeError)
                    else "corrupt or truncated line"
                )
                skip(f"{where}: skipped a {what}")
            return None
        if isinstance(data, dict):
            self._check_version(data, where)
        try:
            return EpisodeRecord.model_validate(data)
        except ValidationError as e:
            if skip is not None:
                skip(
                    f"{where}: skipped a line that is not an episode record ({e.error_count()} errors)"
                )
            return None

    def _inline_images(self, message: Message) -> Message:
        if not isinstance(message.content, list):
            return message
        parts = []
        for part in message.content:
            path = self.image_path(part) if isinstance(part, ImagePart) else None
            if path is not None:
                part = ImagePart.from_png(path.read_bytes())
            parts.append(part)
        return message.model_copy(update={"content": parts})

    def image_path(self, part: ImagePart) -> Path | None:
        """The file behind a ``file:`` image reference, which must lie inside this run.

        A run directory may come from anyone: a reference that leaves it (``file:../x``,
        ``file:/etc/x``, a symlink out) or names no file is refused, never read.
        """
        url = part.image_url.url
        if not url.startswith(FILE_PREFIX):
            return None
        ref = url[len(FILE_PREFIX) :]
        root = self.path.resolve()
        path = (root / ref).resolve()
        if Path(ref).is_absolute() or not path.is_relative_to(root / IMAGES):
            raise RunDirError(f"image reference {url!r} points outside {self.path / IMAGES}")
        if not path.is_file():
            raise RunDirError(f"image reference {url!r} names no file in the run")
        return path

    def done_ids(self) -> set[str]:
        """Ids of the finished episodes, read cheaply (for resuming)."""
        ids: set[str] = set()
        if not self.episodes_path.exists():
            return ids
        self.check()
        with open(self.episodes_path, "rb") as f:
            for line in f:
                try:
                    ids.add(json.loads(line.decode("utf-8"))["episode_id"])
                except (UnicodeDecodeError, ValueError, RecursionError, KeyError, TypeError):
                    continue
        return ids


SAMPLED_ABOVE = 64 << 20  # bytes: a bigger file is fingerprinted by blocks spread over it
SAMPLE_BLOCKS, SAMPLE_BLOCK = 64, 1 << 20


def content_fingerprint(path: str | Path | None) -> str | None:
    """A digest of what ``path`` holds (a file, or a directory's files), ``None`` if nothing.

    An eval's run identity records it beside the path it was given (an instances file, a
    model directory), so a copied run resumes while a model retrained at the same path is
    another eval. Files up to 64 MiB are hashed whole; a bigger one by its size and 64
    blocks of 1 MiB spread evenly over it: fine-tuning rewrites weights throughout a file,
    and reading gigabytes would delay every eval's start. A directory hashes its regular
    files directly inside it (a model's weights, config and tokenizer), by name.
    """
    if path is None:
        return None
    root = Path(path)
    if root.is_file():
        files = [root]
    elif root.is_dir():
        files = sorted(f for f in root.iterdir() if f.is_file())
    else:
        return None
    digest = hashlib.sha256()
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.name if file is not root else ''}\0{size}\0".encode())
        with open(file, "rb") as f:
            if size <= SAMPLED_ABOVE:
                for block in iter(lambda: f.read(SAMPLE_BLOCK), b""):
                    digest.update(block)
                continue
            for i in range(SAMPLE_BLOCKS):
                f.seek((size - SAMPLE_BLOCK) * i // (SAMPLE_BLOCKS - 1))
                digest.update(f.read(SAMPLE_BLOCK))
    return "sha256:" + digest.hexdigest()[:32]


def find_run_dirs(root: Path, depth: int = 3) -> list[Path]:
    """``root`` if it is a run directory, else the run directories up to ``depth`` levels below it."""
    if (root / EPISODES).is_file():
        return [root]
    if depth == 0 or not root.is_dir():
        return []
    found: list[Path] = []
    for child in sorted(p for p in root.iterdir() if p.is_dir()):
        found.extend(find_run_dirs(child, depth - 1))
    return found


def _warn_skipped(message: str) -> None:
    warnings.warn(message, CorruptLineWarning, stacklevel=4)


__all__ = [
    "CorruptLineWarning",
    "EncodedRecord",
    "EpisodeRecord",
    "LineRef",
    "RunDir",
    "RunDirError",
    "atomic_open",
    "atomic_write_text",
    "find_run_dirs",
]
