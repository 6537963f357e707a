"""``bootcamp new``: write a complete, installable task package that already works.

The package is a working example domain (find a hidden cell on a grid; with
``--modality vision``, read it off an image) in the same file shape as the built-in
tasks, with its own ``pyproject.toml`` registering the ``agentharness.tasks`` entry
point, an expert, tests and a README. Comments marked ``DOMAIN:`` say what to replace.
It passes ``bootcamp check`` and its own tests as written.

Templates live in ``templates/package/*.tmpl``; ``__NAME__``, ``__CLASS__`` and friends are
substituted, and ``#<text>``/``#<vision>`` blocks are kept for their modality only.
"""

from __future__ import annotations

import importlib.util
import keyword
import re
import subprocess
import sys
from pathlib import Path
from typing import Literal

TEMPLATES = Path(__file__).parent / "templates" / "package"
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
SUMMARIES = {
    "text": "find a hidden cell on a grid with distance probes, in as few probes as possible.",
    "vision": "read a target's cell off an image of a grid with decoys.",
}
# Where each template goes; the package's own modules land in <name>/.
LAYOUT = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "tests/test_task.py.tmpl": "tests/test_{name}.py",
}
VISION_ONLY = {"render.py.tmpl"}


class ScaffoldError(ValueError):
    """A name or target directory that cannot take a new package."""


def check_name(name: str) -> None:
    if not NAME_RE.match(name) or keyword.iskeyword(name):
        raise ScaffoldError(
            f"'{name}' is not a valid task name: use lowercase letters, digits and underscores, "
            "starting with a letter (it becomes the task id and the Python package name)"
        )
    from agentharness.core.registry import all_tasks

    if any(spec.name == name for spec in all_tasks()):
        raise ScaffoldError(f"a task named '{name}' is already registered; pick another name")
    if importlib.util.find_spec(name) is not None:
        raise ScaffoldError(
            f"a Python module named '{name}' already exists here; pick a name that does not "
            "shadow it"
        )


def _select(text: str, modality: str) -> str:
    """Keep the ``#<modality>`` blocks of this modality, drop the others, drop the markers."""
    out: list[str] = []
    keep = [True]
    for line in text.splitlines(keepends=True):
        marker = re.fullmatch(r"\s*#<(/?)(text|vision)>\s*", line)
        if marker:
            if marker.group(1):
                keep.pop()
            else:
                keep.append(keep[-1] and marker.group(2) == modality)
            continue
        if keep[-1]:
            out.append(line)
    return "".join(out)


def render(name: str, modality: Literal["text", "vision"]) -> dict[str, str]:
    """Relative path -> file text of the package for ``name`` (nothing written)."""
    values = {
        "__NAME__": name,
        "__CLASS__": "".join(part.capitalize() for part in name.split("_")),
        "__DIST__": f"agentharness-task-{name.replace('_', '-')}",
        "__MODALITY__": modality,
        "__SUMMARY__": SUMMARIES[modality].capitalize(),
        "__VISION_DEPS__": ', "pillow>=10"' if modality == "vision" else "",
        "__RENDER_ROW__": f"| `{name}/render.py` | the images |\n" if modality == "vision" else "",
    }
    files: dict[str, str] = {}
    for template in sorted(TEMPLATES.rglob("*.tmpl")):
        rel = template.relative_to(TEMPLATES).as_posix()
        if rel in VISION_ONLY and modality != "vision":
            continue
        text = _select(template.read_text(), modality)
        for key, value in values.items():
            text = text.replace(key, value)
        target = LAYOUT.get(rel, f"{name}/{rel.removesuffix('.tmpl')}").format(name=name)
        files[target] = text
    return files


def write_package(name: str, out: Path, modality: Literal["text", "vision"] = "text") -> list[Path]:
    """Write the package for ``name`` into ``out`` (which must be empty or absent)."""
    check_name(name)
    if modality not in SUMMARIES:
        raise ScaffoldError(f"modality must be text or vision, got '{modality}'")
    if out.exists() and any(out.iterdir()):
        raise ScaffoldError(f"{out} is not empty; choose a new directory with -o")
    written = []
    for rel, text in render(name, modality).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def install(package_dir: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    """``pip install -e`` the package into ``python``'s environment, offline.

    ``--no-deps --no-build-isolation``: agentharness is already there, and an isolated
    build would fetch setuptools from an index.
    """
    cmd = [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", "-e"]
    return subprocess.run(
        [*cmd, str(package_dir)], capture_output=True, text=True, check=False, timeout=600
    )
