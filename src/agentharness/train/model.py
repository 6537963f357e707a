"""Loading a model to train and saving what the ``local`` agent loads back.

Models are named as for ``--agent local``: ``smollm2`` (the bundled SmolLM2-135M-Instruct
GGUF), a checkpoint directory, or a ``.gguf`` file; nothing is downloaded. A model loaded
from GGUF is dequantized by transformers but keeps a GGUF "quantizer" that forbids
training and ``save_pretrained``; it is rebuilt here as a plain float32 model.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import math
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentharness.agents.local import DEFAULT_MODEL, load_model
from agentharness.store.run import atomic_write_text
from agentharness.train import DTYPES, TrainInputError
from agentharness.train.allocator import running_allocator

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def keep_freed_memory() -> bool:
    """Have glibc's malloc keep freed memory for reuse instead of returning it to the system.

    A training step allocates and frees tensors of tens to hundreds of MB (activations,
    logits, gradients). glibc serves each block above its mmap threshold (32 MB at most)
    with a fresh mapping and unmaps it when freed, so every step faults in and zeroes its
    memory again: an SFT step on a 2-core CPU spent about 40% of its CPU time in the kernel.
    With mmap off and trimming off, freed blocks stay in the heap and the next step reuses
    them: SFT steps 1.55x and the GRPO training pass 1.18x faster, for a resident size
    that stays at the step's peak (bench/RESULTS.md). Called by :func:`load_trainable`, so it
    applies to processes that train. Does nothing (returns False) off glibc, under mimalloc
    (:mod:`agentharness.train.allocator`: the default for ``train sft`` and ``train grpo``,
    since a GRPO process's mix of rollouts and training fragments glibc's heap), when
    ``GLIBC_TUNABLES`` already sets a malloc tunable (the user's choice wins), or with
    ``AGENTHARNESS_MALLOC=system``.
    """
    if not sys.platform.startswith("linux") or running_allocator() != "glibc":
        return False
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present only in glibc
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))


def resident_gb() -> float | None:
    """This process's resident memory now, in GiB (from /proc; None where there is none).

    Training processes keep the memory they free (:func:`keep_freed_memory`), so this is
    also how much the heap has grown to: the GRPO step log prints it to show growth."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**30


def available_memory_bytes() -> int | None:
    """Memory this process can still get, in bytes: the system's ``MemAvailable`` (from
    /proc/meminfo), or less where a memory cgroup (a container's, a job's) limits this
    process or one of its parent groups (its limit minus its usage); None where neither
    is known. A container sees the host's ``MemAvailable``, so the cgroup's room matters.
    """
    system = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                system = int(line.split()[1]) * 1024  # the file counts kB
                break
    except (OSError, ValueError, IndexError):
        pass
    rooms = [room for room in (system, cgroup_room_bytes()) if room is not None]
    return min(rooms) if rooms else None


# cgroup v2 files (limit, usage) and v1's; a limit this large or "max" means none
_CGROUP_FILES = {
    "v2": ("memory.max", "memory.current"),
    "v1": ("memory.limit_in_bytes", "memory.usage_in_bytes"),
}
_NO_LIMIT = 1 << 60


def cgroup_room_bytes(
    root: Path = Path("/sys/fs/cgroup"), membership: Path = Path("/proc/self/cgroup")
) -> int | None:
    """The least room (limit minus usage) of the memory cgroups this process is in
    (``membership``) and their parents, in bytes; None without a limited one (or off Linux)."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    places: list[tuple[str, Path]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        relative = path.strip("/")
        if controllers == "":  # v2 (unified): mounted at the root, or beside v1 as "unified"
            places += [("v2", root / relative), ("v2", root / "unified" / relative)]
        elif "memory" in controllers.split(","):
            places.append(("v1", root / "memory" / relative))
    rooms = []
    for version, place in places:
        limit_name, usage_name = _CGROUP_FILES[version]
        for group in (place, *place.parents):
            if not group.is_relative_to(root):
                break
            try:
                limit_text = (group / limit_name).read_text().strip()
                limit = _NO_LIMIT if limit_text == "max" else int(limit_text)
                usage = int((group / usage_name).read_text())
            except (OSError, ValueError):
                continue
            if limit < _NO_LIMIT:
                rooms.append(max(0, limit - usage))
    return min(rooms) if rooms else None


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def free_heap_bytes() -> int:
    """Bytes glibc's malloc holds freed in this process's heap (0 without glibc 2.33 or later).

    With :func:`keep_freed_memory` a step's freed activations stay there for the next step
    to reuse: memory this process can use that the system no longer counts as available.
    """
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return 0
    mallinfo2.argtypes, mallinfo2.restype = [], _MallInfo2
    return int(mallinfo2().fordblks)


def peak_resident_gb() -> float | None:
    """The largest resident memory this process has had, in GiB to 0.01 (None on Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return round(peak / (2**30 if sys.platform == "darwin" else 2**20), 2)


def load_trainable(model: str | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) ready for a trainer: float32, in train mode, with a pad token.

    Also sets up this process's allocator for training (:func:`keep_freed_memory`).
    """
    import torch

    keep_freed_memory()
    from transformers import AutoModelForCausalLM

    net, tokenizer = load_model(model or DEFAULT_MODEL)
    if getattr(net, "hf_quantizer", None) is not None:
        config = net.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        plain.load_state_dict(net.state_dict())
        plain.generation_config = net.generation_config
        net = plain
    net = net.float()
    net.train()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return net, tokenizer


def save_final(net: Any, tokenizer: Any, directory: Path) -> Path:
    """Save a (possibly LoRA-wrapped) model and its tokenizer as a plain checkpoint.

    A peft model is merged first, so the directory loads with ``--agent local --model DIR``
    without peft. An earlier save in ``directory`` is replaced whole.
    """
    if hasattr(net, "merge_and_unload"):
        net = net.merge_and_unload()
    # Written beside it and renamed into place: a run stopped while saving leaves no
    # ``directory`` with a config.json and half its weights for a re-run to trust.
    partial = directory.with_name(f".{directory.name}.partial")
    replaced = directory.with_name(f".{directory.name}.replaced")
    for leftover in (partial, replaced):
        shutil.rmtree(leftover, ignore_errors=True)
    try:
        net.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if directory.exists():
        directory.rename(replaced)
    partial.rename(directory)
    shutil.rmtree(replaced, ignore_errors=True)
    return directory


def fast_bfloat16() -> bool:
    """Does this machine multiply bfloat16 matrices fast?

    A CUDA GPU that supports bfloat16, or a CPU oneDNN runs bfloat16 kernels on (AVX-512
    with BF16, AMX). On a CPU with AVX2 only, torch emulates bfloat16 and SmolLM2's matrix
    products take 24-242x as long as in float32 (bench/RESULTS.md, "bfloat16 without
    bfloat16 instructions"), so there float32 is the fast choice.
    """
    import torch

    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch built without oneDNN
        return False


def resolve_dtype(name: str, what: str = "dtype") -> str:
    """``float32`` or ``bfloat16``: ``auto`` is bfloat16 where :func:`fast_bfloat16`, else
    float32; ``what`` names the option in the error for anything else."""
    if name not in DTYPES:
        raise TrainInputError(f"{what} {name!r}: choose {', '.join(DTYPES)}")
    if name != "auto":
        return name
    return "bfloat16" if fast_bfloat16() else "float32"


@dataclass(frozen=True)
class RunOptions:
    """What an SFT and a GRPO run (``SFTOptions``, ``GRPOOptions``) both take."""

    # "bfloat16": the forward and backward under bfloat16 autocast (float32 master weights;
    # 1.26x faster than "float32" on a CPU with AVX-512 BF16, 24-242x slower on one with
    # AVX2 only, bench/RESULTS.md); "float32" is exact; "auto" picks bfloat16 only where
    # this machine multiplies it fast (resolve_dtype).
    train_dtype: str = "auto"
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    seed: int = 0
    logging_steps: int = 1
    # Run control: trackers, resumable checkpoints, progress bars; ``extra`` goes to the
    # trainer's config as given.
    report_to: tuple[str, ...] = ()
    save_steps: int | None = None
    resume: bool = False
    progress: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def training_args(self) -> dict[str, Any]:
        """The ``TrainingArguments`` these options set (:func:`shared_training_args`)."""
        return shared_training_args(
            self.seed,
            report_to=self.report_to,
            save_steps=self.save_steps,
            progress=self.progress,
            train_dtype=self.train_dtype,
        )


def shared_training_args(
    seed: int,
    *,
    report_to: Sequence[str] = (),
    save_steps: int | None = None,
    progress: bool = False,
    train_dtype: str = "float32",
) -> dict[str, Any]:
    """The ``TrainingArguments`` both trainers share.

    Fixed seeds; a CUDA GPU when present (bf16 where it supports it), otherwise the CPU in
    float32. ``train_dtype`` ``bfloat16`` runs the forward and backward passes under
    bfloat16 autocast on the CPU too (the weights and optimizer stay float32; about 1.5x
    faster on a CPU with bfloat16 instructions, much slower on one without, see
    bench/RESULTS.md); ``auto`` picks it only where it is fast (:func:`resolve_dtype`).
    ``report_to`` names installed HF trackers (:func:`check_report_to`);
    ``save_steps`` writes a resumable checkpoint (model, optimizer, scheduler, RNG, step)
    under ``OUT/trainer/checkpoint-N`` every N optimizer steps, keeping the last two;
    without it only ``OUT/final`` is saved, at the end. ``progress`` shows tqdm bars.
    """
    import torch

    train_dtype = resolve_dtype(train_dtype, "train_dtype")
    cuda = torch.cuda.is_available()
    saving: dict[str, Any] = {"save_strategy": "no"}
    if save_steps is not None:
        if save_steps < 1:
            raise TrainInputError(f"save_steps must be at least 1, got {save_steps}")
        saving = {"save_strategy": "steps", "save_steps": save_steps, "save_total_limit": 2}
    return {
        **saving,
        "report_to": check_report_to(report_to),
        "use_cpu": not cuda,
        "bf16": train_dtype == "bfloat16" or (cuda and torch.cuda.is_bf16_supported()),
        "gradient_checkpointing": False,
        "seed": seed,
        "data_seed": seed,
        "disable_tqdm": not progress,
    }


def check_report_to(names: Sequence[str]) -> list[str]:
    """Tracker names for ``report_to`` (``all``: every installed one, ``none``: no tracker).

    Each must be an HF integration installed here (tensorboard, trackio, wandb, mlflow, ...);
    anything else is an error naming the installed ones, before any training starts.
    """
    wanted = [n.strip() for name in names for n in name.split(",") if n.strip()]
    if not wanted or wanted == ["none"]:
        return []
    from transformers.integrations import get_available_reporting_integrations

    available = list(get_available_reporting_integrations())
    if wanted == ["all"]:
        return available
    missing = [n for n in wanted if n not in available]
    if missing:
        raise TrainInputError(
            f"--report-to {', '.join(missing)}: no such tracker installed here (installed: "
            f"{', '.join(available) or 'none'}); install it, e.g. pip install tensorboard or trackio"
        )
    return wanted


def resume_checkpoint(trainer_dir: Path, resume: bool) -> str | None:
    """The checkpoint ``trainer.train(resume_from_checkpoint=...)`` continues from, if ``resume``.

    The newest complete one: the trainer writes a checkpoint's ``trainer_state.json`` last,
    so a checkpoint without a readable one is what a run stopped while saving left behind
    (killed, preempted, out of memory). Those are skipped with a note, and the run goes on
    from the checkpoint before (the trainer writes the skipped step's checkpoint again).
    """
    if not resume:
        return None
    checkpoints = sorted(
        (p for p in trainer_dir.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()),
        key=lambda p: int(p.name.split("-")[-1]),
        reverse=True,
    )
    if not checkpoints:
        raise TrainInputError(
            f"--resume: no checkpoint under {trainer_dir}; train with --save-steps N to write them"
        )
    incomplete = list(itertools.takewhile(lambda p: not _complete(p), checkpoints))
    if len(incomplete) == len(checkpoints):
        raise TrainInputError(
            f"--resume: no complete checkpoint under {trainer_dir} (none has a readable "
            f"{TRAINER_STATE}: the run was stopped while saving {', '.join(p.name for p in incomplete)}); "
            "delete them and train again without --resume"
        )
    if incomplete:
        print(
            f"[train] skipping {', '.join(p.name for p in incomplete)}: no readable "
            f"{TRAINER_STATE} (the run was stopped while saving it); resuming from "
            f"{checkpoints[len(incomplete)].name}",
            file=sys.stderr,
        )
    return str(checkpoints[len(incomplete)])


TRAINER_STATE = "trainer_state.json"  # the last file the HF trainer writes into a checkpoint


def _complete(checkpoint: Path) -> bool:
    try:
        state = json.loads((checkpoint / TRAINER_STATE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(state, dict) and "global_step" in state


def finite_losses(log_history: list[dict[str, Any]], key: str = "loss") -> list[float]:
    """The logged ``key`` values; raises if any is NaN or infinite (a diverged run)."""
    values = [float(h[key]) for h in log_history if key in h]
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        raise FloatingPointError(
            f"training diverged: {len(bad)} logged {key} value(s) are not finite"
        )
    return values


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON, whole or not at all (a run stopped mid-write keeps the old file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def lora_config(r: int, alpha: int) -> Any:
    """A LoRA adapter on every linear layer (peft)."""
    from peft import LoraConfig

    return LoraConfig(r=r, lora_alpha=alpha, target_modules="all-linear", task_type="CAUSAL_LM")
