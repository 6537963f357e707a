"""``bootcamp convert``: an LLM writes a task package from a description and repairs it.

The writer starts from the ``bootcamp new`` package (which passes the check) and gives
the model a task spec (a markdown description, or an existing environment's source
files) and five tools: ``list_files``, ``read_file``, ``write_file``, ``run_check`` and
``finish``. ``run_check`` runs the conformance check and the package's own tests in a
subprocess, with a timeout and without network (a fresh network namespace where
``unshare`` allows it, else a socket guard), and returns the failures for the model to
repair. Every check is an attempt, logged to ``<package>/.convert/attempts.jsonl`` with
the files as they were; the conversation goes to ``.convert/transcript.json``.

The writer runs as an episode of the harness (the same parsing, budgets and agents as
any task), so ``--agent openai`` works with any OpenAI-compatible server. When the
model stops, the harness re-runs the check itself and registers (``pip install -e``) the
package only if it passes: a package that fails the check is never registered.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from agentharness.agents.base import Agent
from agentharness.core.episode import Episode, Trajectory
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.reward import Reward
from agentharness.core.task import Budgets, Interaction, Problem, TaskSpec
from agentharness.core.tools import ToolError, World, tool
from agentharness.sources.scaffold import check_name, write_package

CHECK_TIMEOUT_S = 600.0
MAX_FILE_BYTES = 200_000
MAX_SPEC_CHARS = 60_000
# What the model is shown of one check run: the check's report (its FAIL lines say what
# broke) and the end of the test output (where pytest puts the failures' summary).
CHECK_FEEDBACK_CHARS = 4_000
TESTS_FEEDBACK_CHARS = 3_000
LOG_DIR = ".convert"

SYSTEM = """\
You write task packages for agentharness, a harness of executable, verifiable \
multi-turn environments for training LLM agents. The package directory already holds a \
complete, working example task (find a hidden cell on a grid) in the required shape: \
config.py (knobs and DIFFICULTIES), simulator.py (the domain), generator.py (layer 1: \
deterministic generate(config, seed) and prompt), tools.py (layer 2: a World with @tool \
methods), interaction.py (layer 3), reward.py (layer 4), expert.py (a solver that acts \
through the tools), task.py (the TaskSpec) and tests/. Comments marked DOMAIN: say what \
to replace.

Rewrite it into the task described below. Rules the check enforces: the same seed gives \
the same instance; the expert solves every difficulty; random, do-nothing and lazy \
policies (submit at once, one constant answer, repeating one action) earn next to \
nothing, so pay for solving, never for avoiding mistakes; bad tool arguments come back \
as messages. Keep the task name and the entry point in pyproject.toml.

Work with the tools: read the files, write whole files, then call run_check. Read its \
failures and repair until it passes, then call finish."""


class CheckOutcome(BaseModel):
    """One run of the conformance check and the package's tests."""

    passed: bool
    check_passed: bool
    tests_passed: bool
    check_output: str
    tests_output: str
    seconds: float

    @property
    def output(self) -> str:
        return f"{self.check_output}\n{self.tests_output}"

    def feedback(self) -> str:
        """The part of the output a model should read, within a bounded size."""
        check = self.check_output
        if len(check) > CHECK_FEEDBACK_CHARS:
            check = check[:CHECK_FEEDBACK_CHARS] + "\n..."
        tests = self.tests_output
        if len(tests) > TESTS_FEEDBACK_CHARS:
            head = tests.split("\n", 1)[0]
            tests = f"{head}\n...\n{tests[-TESTS_FEEDBACK_CHARS:]}"
        return f"{check}\n{tests}"


def _sandbox_prefix() -> list[str]:
    """``unshare`` into a new user and network namespace when the kernel allows it."""
    exe = shutil.which("unshare")
    if exe is None:
        return []
    try:
        ok = subprocess.run([exe, "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return []
    return [exe, "-rn"] if ok else []


@functools.lru_cache(maxsize=1)
def sandbox_prefix() -> tuple[str, ...]:
    return tuple(_sandbox_prefix())


# Where unshare is not allowed, this sitecustomize refuses every IP connection.
_SOCKET_GUARD = """
import socket
_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
def _refuse(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        raise OSError("network access is disabled while checking a package")
def _guarded(self, address):
    _refuse(self, address)
    return _connect(self, address)
def _guarded_ex(self, address):
    _refuse(self, address)
    return _connect_ex(self, address)
socket.socket.connect, socket.socket.connect_ex = _guarded, _guarded_ex
"""

_CHECK_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
import importlib
from agentharness.core.registry import register
from agentharness.conformance import check_task
spec = register(importlib.import_module(sys.argv[2] + ".task").TASK)
report = check_task(spec, seeds=int(sys.argv[3]))
print(("PASS " if report.passed else "FAIL ") + spec.id)
for r in report.results:
    mark = "skip" if getattr(r, "skipped", False) else ("ok  " if r.passed else "FAIL")
    print(f"   {mark} {r.name}: {r.detail}")
sys.exit(0 if report.passed else 1)
"""


def run_check(package_dir: Path, name: str, timeout_s: float = CHECK_TIMEOUT_S) -> CheckOutcome:
    """The conformance check, then the package's tests, in a sandboxed subprocess."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as guard_dir:
        prefix = list(sandbox_prefix())
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        paths = [str(package_dir)]
        if not prefix:
            Path(guard_dir, "sitecustomize.py").write_text(_SOCKET_GUARD)
            paths.insert(0, guard_dir)
        here = str(Path(__file__).resolve().parents[2])  # this agentharness, first
        env["PYTHONPATH"] = os.pathsep.join([*paths, here, env.get("PYTHONPATH", "")])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        parts: list[str] = []

        def run(argv: list[str], label: str) -> bool:
            try:
                done = subprocess.run(
                    [*prefix, *argv],
                    cwd=package_dir,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                )
            except subprocess.TimeoutExpired:
                parts.append(f"== {label}: timed out after {timeout_s:g} s")
                return False
            out = (done.stdout + done.stderr).strip()
            parts.append(f"== {label}: {'passed' if done.returncode == 0 else 'FAILED'}\n{out}")
            return done.returncode == 0

        check_ok = run(
            [sys.executable, "-c", _CHECK_SCRIPT, str(package_dir), name, "2"], "bootcamp check"
        )
        tests_ok = run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests"],
            "package tests",
        )
    return CheckOutcome(
        passed=check_ok and tests_ok,
        check_passed=check_ok,
        tests_passed=tests_ok,
        check_output=parts[0],
        tests_output=parts[1],
        seconds=time.perf_counter() - start,
    )


class WriterWorld(World):
    """The package directory and the check; every check is a logged attempt."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.root = Path(instance.public["package_dir"]).resolve()
        self.name = instance.public["name"]
        self.max_checks = int(instance.public["max_checks"])
        self.timeout_s = float(instance.public["check_timeout_s"])
        self.attempts: list[CheckOutcome] = []
        self.log = self.root / LOG_DIR / "attempts.jsonl"
        self.writes = 0  # files the writer wrote; none leaves the scaffold's example task

    def _path(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if self.root not in target.parents or LOG_DIR in target.relative_to(self.root).parts:
            raise ToolError(f"'{path}' is outside the package; use a path relative to it")
        return target

    def _files(self) -> list[str]:
        return sorted(
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file()
            and LOG_DIR not in p.relative_to(self.root).parts
            and "__pycache__" not in p.parts
            and not p.name.endswith(".egg-info")
            and ".egg-info" not in p.relative_to(self.root).as_posix()
        )

    @tool
    def list_files(self) -> str:
        """List the package's files (paths relative to the package directory)."""
        return "\n".join(self._files())

    @tool
    def read_file(self, path: str) -> str:
        """Read one file of the package.

        Args:
            path: relative to the package directory, e.g. 'mytask/reward.py'.
        """
        target = self._path(path)
        if not target.is_file():
            raise ToolError(f"no file '{path}'; list_files shows what exists")
        return target.read_text()

    @tool
    def write_file(self, path: str, content: str) -> str:
        """Write a whole file (created or replaced).

        Args:
            path: relative to the package directory, e.g. 'mytask/reward.py'.
            content: the complete new text of the file.
        """
        if len(content.encode()) > MAX_FILE_BYTES:
            raise ToolError(f"file too large (limit {MAX_FILE_BYTES} bytes); split it")
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        self.writes += 1
        return f"wrote {path} ({content.count(chr(10)) + 1} lines)"

    @tool
    def run_check(self) -> str:
        """Run bootcamp check and the package's tests; returns what failed."""
        if len(self.attempts) >= self.max_checks:
            raise ToolError(f"the check budget ({self.max_checks} runs) is spent; call finish")
        outcome = run_check(self.root, self.name, self.timeout_s)
        self.attempts.append(outcome)
        self._log(outcome)
        verdict = "PASSED" if outcome.passed else "FAILED"
        left = self.max_checks - len(self.attempts)
        return f"attempt {len(self.attempts)}: {verdict} ({left} checks left)\n{outcome.feedback()}"

    @tool(final=True)
    def finish(self, summary: str) -> str:
        """Stop writing; the harness re-runs the check before registering the package.

        Args:
            summary: what the task is and how it is scored, in a sentence or two.
        """
        if self.attempts and not self.attempts[-1].passed and len(self.attempts) < self.max_checks:
            raise ToolError("the last check failed; repair it and run_check again before finish")
        return "finished"

    def _log(self, outcome: CheckOutcome) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        files = {f: (self.root / f).read_text(errors="replace") for f in self._files()}
        row = {"attempt": len(self.attempts), **outcome.model_dump(), "files": files}  # full output
        with open(self.log, "a") as fh:
            fh.write(json.dumps(row) + "\n")


class _Prompt:
    def generate(self, config: BaseModel, seed: int) -> Problem:
        # The writer's one instance is built by convert() from the spec, not from a seed.
        raise TypeError("the task writer has no generated instances; use convert()")

    def prompt(self, instance: Instance) -> list[Message]:
        p = instance.public
        return [
            system(SYSTEM),
            user(
                f"Task name: {p['name']} (the package is {p['name']}/ in the directory).\n\n"
                f"The task to write:\n\n{p['spec']}\n\nFiles now:\n{p['files']}"
            ),
        ]


def _no_reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    return Reward.zero("the writer is judged by the check, not a reward")


class _Nudge(Interaction):
    def on_no_tool_call(
        self, instance: Instance, world: World, message: Message, nudges: int
    ) -> str | None:
        return "Call a tool: write files, run_check, and finish once the check passes."


class _Empty(BaseModel):
    pass


WRITER = TaskSpec(
    name="task_writer",
    version=1,
    modality="text",
    description="Write a task package from a description until the conformance check passes.",
    config_model=_Empty,
    difficulties={"medium": {}},
    generator=_Prompt(),
    world=WriterWorld,
    interaction=_Nudge(),
    reward=_no_reward,
    expert=None,
)


def read_spec(path: Path) -> str:
    """A markdown file as is, or a directory's source files, each under its name."""
    if path.is_file():
        return path.read_text()[:MAX_SPEC_CHARS]
    if not path.is_dir():
        raise FileNotFoundError(f"spec {path} does not exist (give a .md file or a directory)")
    chunks: list[str] = []
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.suffix in {".py", ".md", ".txt", ".toml", ".json", ".yaml", ".yml"}:
            chunks.append(f"--- {f.relative_to(path)} ---\n{f.read_text(errors='replace')}")
    text = "An existing environment's source files, to convert:\n\n" + "\n\n".join(chunks)
    return text[:MAX_SPEC_CHARS]


@dataclass
class ConvertResult:
    package_dir: Path
    attempts: list[CheckOutcome]
    final: CheckOutcome
    end_reason: str | None
    registered: bool
    # Why the package is not the described task whatever the check says (the writing
    # agent failed, or wrote nothing and left the scaffold's example); None when it is.
    problem: str | None = None

    @property
    def passed(self) -> bool:
        return self.final.passed and self.problem is None


async def convert(
    spec_text: str,
    name: str,
    out: Path,
    agent: Agent,
    *,
    max_turns: int = 60,
    max_checks: int = 8,
    check_timeout_s: float = CHECK_TIMEOUT_S,
    register: bool = True,
) -> ConvertResult:
    """Write ``name`` into ``out`` from ``spec_text`` with ``agent``; register it if it passes."""
    check_name(name)
    write_package(name, out)
    instance = Instance(
        task=WRITER.id,
        seed=0,
        difficulty="medium",
        config={},
        public={
            "name": name,
            "package_dir": str(out.resolve()),
            "spec": spec_text,
            "files": "\n".join(sorted(p.relative_to(out).as_posix() for p in out.rglob("*.*"))),
            "max_checks": max_checks,
            "check_timeout_s": check_timeout_s,
        },
        hidden={},
    )
    budgets = Budgets(max_turns=max_turns, max_tool_calls=max_turns * 4, max_nudges=3)
    episode = Episode(spec=WRITER, instance=instance, budgets=budgets)
    from agentharness.rollout.runner import drive

    await drive(episode, agent.policy(instance))
    world = episode.world
    assert isinstance(world, WriterWorld)
    # The harness's own verdict: the model's last word is not trusted.
    final = await asyncio.to_thread(run_check, out, name, check_timeout_s)
    log_dir = out / LOG_DIR
    log_dir.mkdir(exist_ok=True)
    (log_dir / "transcript.json").write_text(
        json.dumps(
            {
                "end_reason": episode.end_reason,
                "error": episode.error,
                "messages": [m.model_dump(mode="json") for m in episode.messages],
                "final_check": final.model_dump(),
            },
            indent=1,
        )
    )
    problem = None
    if episode.end_reason == "agent_error":
        first = (episode.error or "no message").strip().splitlines()[0]
        problem = f"the writing agent failed ({first})"
    elif world.writes == 0:
        problem = "the writer wrote no file, so the package is still the scaffold's example task"
    registered = False
    if final.passed and register and problem is None:
        from agentharness.sources.scaffold import install

        result = install(out)
        registered = result.returncode == 0
        if not registered:
            raise RuntimeError(f"pip install -e {out} failed:\n{result.stderr[-2000:]}")
    return ConvertResult(out, world.attempts, final, episode.end_reason, registered, problem)
