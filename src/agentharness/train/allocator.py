"""The memory allocator a training process runs under.

A GRPO process alternates rollouts (token-by-token decoding: many small and growing
buffers) with training passes (activations of tens to hundreds of MB, kept or freed by the
activation budget), in one heap for hours. glibc's malloc fragments under that mix: after
one step its heap held ~19,000 free chunks, after eight ~50,000, and because glibc searches
its free lists chunk by chunk, every allocation slows with them. A fixed forward pass of
SmolLM2 slowed 2.4x in eight thermal steps, the rollouts 1.7x, and the resident memory grew
by about 0.5 GB a step (bench/RESULTS.md, "The allocator of a GRPO process"). mimalloc
(size-segregated pages, freed pages returned to the system after 10 ms) keeps both flat.

An SFT step repeats one pattern of large tensors, so there mimalloc's returning of freed
pages only makes every step fault them in and zero them again (an SFT process spent 232 of
its 430 s in the kernel, slower than glibc keeping its freed memory). Both commands run
with purging off (``MIMALLOC_PURGE_DELAY=-1``): freed pages are reused. SFT is then faster
than under either, with a smaller peak than glibc's kept heap (bench/RESULTS.md, "Freed
pages kept"). A GRPO stage of 48 steps at the experiment's budgets wrote the same model,
bit for bit, as with purging, 1.18x faster; its resident size levelled off at 14.9 GB from
step 17 (peak 14.9 GB, purging's 14.4; bench/RESULTS.md, "A whole GRPO stage with freed
pages kept").

mimalloc has to be loaded before the process starts (``LD_PRELOAD``), so ``bootcamp train
sft`` and ``train grpo`` start themselves once more under it (:func:`restart_under_mimalloc`)
when the 'train' extra installed it (the ``cmeel-mimalloc`` wheel, Linux x86-64).
``AGENTHARNESS_MALLOC`` chooses: ``mimalloc`` (the default), ``glibc`` (glibc, keeping freed
memory for reuse: :func:`~agentharness.train.model.keep_freed_memory`) or ``system``
(nothing changed); a ``MIMALLOC_PURGE_DELAY`` of one's own wins. From Python, start the
process with ``LD_PRELOAD`` set to :func:`mimalloc_library` (and the command's
:data:`MIMALLOC_SETTINGS`).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from agentharness.train import TrainInputError

ALLOCATOR_VARIABLE = "AGENTHARNESS_MALLOC"
ALLOCATORS = ("mimalloc", "glibc", "system")
# Set in the restarted process: a process restarts at most once, whatever LD_PRELOAD became.
_RESTARTED = "AGENTHARNESS_MALLOC_RESTARTED"
# The commands that restart under mimalloc, each with the mimalloc options it runs with
# (MIMALLOC_PURGE_DELAY: how many ms a freed page waits before it goes back to the system;
# -1 never). The module's docstring says why both keep their pages.
MIMALLOC_SETTINGS: dict[tuple[str, ...], dict[str, str]] = {
    ("train", "sft"): {"MIMALLOC_PURGE_DELAY": "-1"},
    ("train", "grpo"): {"MIMALLOC_PURGE_DELAY": "-1"},
}


def chosen_allocator(environ: Mapping[str, str] = os.environ) -> str:
    """The allocator ``AGENTHARNESS_MALLOC`` asks for (``mimalloc`` when unset)."""
    name = environ.get(ALLOCATOR_VARIABLE, "").strip() or "mimalloc"
    if name not in ALLOCATORS:
        raise TrainInputError(
            f"{ALLOCATOR_VARIABLE}={name!r}: choose one of {', '.join(ALLOCATORS)} "
            "(or leave it unset for mimalloc)"
        )
    return name


def mimalloc_library() -> Path | None:
    """The mimalloc shared library the 'train' extra installs (``cmeel-mimalloc``), or None."""
    try:
        files = importlib.metadata.files("cmeel-mimalloc") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "libmimalloc.so":
            path = Path(str(file.locate())).resolve()
            return path if path.is_file() else None
    return None


def mimalloc_loaded(maps: Path = Path("/proc/self/maps")) -> bool:
    """Is mimalloc mapped into this process (preloaded)?"""
    try:
        return "libmimalloc" in maps.read_text()
    except OSError:
        return False


def running_allocator() -> str:
    """The allocator this process runs under: ``mimalloc``, ``glibc`` (Linux's, unless
    ``AGENTHARNESS_MALLOC=system``) or ``system`` (recorded in a run's summary)."""
    if mimalloc_loaded():
        return "mimalloc"
    chose_system = os.environ.get(ALLOCATOR_VARIABLE, "").strip() == "system"
    return "glibc" if sys.platform.startswith("linux") and not chose_system else "system"


def keeps_freed_pages(environ: Mapping[str, str] = os.environ) -> bool:
    """Does this process run under mimalloc with freed pages kept (a negative
    ``MIMALLOC_PURGE_DELAY``, as ``train sft`` and ``train grpo`` set)?

    Such pages stay resident and free for the process's next allocations, but neither the
    system's available memory nor glibc's ``mallinfo2`` counts them, and a release build of
    mimalloc does not say how much of its committed memory is in use.
    """
    if not mimalloc_loaded():
        return False
    try:
        return int(environ.get("MIMALLOC_PURGE_DELAY", "").strip()) < 0
    except ValueError:
        return False


def mimalloc_environment(
    environ: Mapping[str, str],
    library: Path | None,
    platform: str = sys.platform,
    settings: Mapping[str, str] | None = None,
) -> dict[str, str] | None:
    """The environment to start this process again under mimalloc (``library``, with the
    mimalloc options ``settings`` where ``environ`` sets none of its own), or None to go on
    as it is: another allocator chosen, not Linux, no library, mimalloc already preloaded,
    or this process already the restarted one."""
    if chosen_allocator(environ) != "mimalloc" or not platform.startswith("linux"):
        return None
    preload = environ.get("LD_PRELOAD", "")
    if library is None or environ.get(_RESTARTED) or "libmimalloc" in preload:
        return None
    return {
        **(settings or {}),
        **environ,
        "LD_PRELOAD": f"{library} {preload}".strip(),
        _RESTARTED: "1",
    }


def restart_under_mimalloc(settings: Mapping[str, str] | None = None) -> None:
    """Start this process again, same interpreter and arguments, with mimalloc preloaded
    (:func:`mimalloc_environment`); return (changing nothing) where it does not apply."""
    environment = mimalloc_environment(os.environ, mimalloc_library(), settings=settings)
    if environment is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, sys.orig_argv, environment)
    except OSError as e:  # go on under the system's allocator
        print(f"[train] could not restart under mimalloc ({e}); using glibc", file=sys.stderr)
