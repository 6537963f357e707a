"""mcp: a real MCP server (tests/sources/mcp_server.py, written with the SDK) as a task."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import agentharness
from agentharness.agents.scripted import ExpertAgent, RandomAgent
from agentharness.conformance import check_task
from agentharness.core.episode import Episode
from agentharness.core.messages import ToolCall, assistant
from agentharness.core.registry import UnknownTaskError, get_task
from agentharness.rollout.runner import run_one

HERE = Path(__file__).parent
SERVER = f"python {HERE / 'mcp_server.py'}"
TASK = f"mcp:{SERVER}#mcp_rewards:score"


@pytest.fixture(autouse=True)
def _rewards_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(HERE))


def _call(name: str, args: dict, n: int = 1) -> dict:
    return assistant(tool_calls=[ToolCall.make(f"c{n}", name, args)]).model_dump()


def _gone(pid: int) -> bool:
    """Whether the process has exited (polled: the SDK stops a server asynchronously)."""
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # reap it if it is our zombie child
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def _server_pid(ep: Episode) -> int:
    return int(ep.world.execute("pid", {}).text)


def test_tools_are_discovered_and_called_with_their_schemas() -> None:
    spec = get_task(TASK)
    assert spec.id == TASK and list(spec.difficulties) == ["easy", "medium", "hard"]
    tools = {t["function"]["name"]: t["function"] for t in spec.world.tool_schemas()}
    assert set(tools) == {"add", "lookup", "swatch", "pid", "crash", "submit"}
    assert tools["add"]["parameters"]["required"] == ["a", "b"]
    ep = agentharness.make(TASK, difficulty="easy").reset(seed=4)
    assert "A calculator" in ep.messages[0].text and "What is" in ep.messages[1].text
    obs = ep.step(_call("add", {"a": 2, "b": 40}))
    assert obs.messages[0].content == "42"
    # Schema validation happens before the server is asked.
    bad = ep.world.execute("add", {"a": "two", "b": 1})
    assert bad.is_error and "'two' is not of type 'integer'" in bad.text
    ep.close()


def test_a_tool_error_is_a_message_and_the_episode_goes_on() -> None:
    ep = agentharness.make(TASK, difficulty="easy").reset(seed=0)
    obs = ep.step(_call("lookup", {"key": "tau"}))
    assert "no constant named 'tau'" in obs.messages[0].content
    assert not ep.done and ep.tool_calls[-1].is_error
    ep.close()


def test_images_come_back_as_images() -> None:
    ep = agentharness.make(TASK, difficulty="easy").reset(seed=0)
    obs = ep.step(_call("swatch", {"red": 255, "green": 0, "blue": 0}))
    assert obs.messages[-1].images and obs.messages[-1].images[0].png_bytes()
    ep.close()


def test_the_expert_solves_and_the_reward_callable_scores() -> None:
    spec = get_task(TASK)
    inst = spec.instance(3, "hard")
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    assert ep.end_reason == "answered" and ep.reward().total == 1.0
    ep, _ = asyncio.run(run_one(inst, RandomAgent().policy(inst)))
    assert ep.reward().total == 0.0
    # Every episode starts a server process (seconds each on a busy 2-core box), so the
    # adversarial hunt is left to `bootcamp check`; the random episode above stands in.
    report = check_task(spec, seeds=2, adversarial_seeds=0)
    assert report.passed, [(r.name, r.detail) for r in report.results if not r.passed]


def test_a_server_that_crashes_mid_episode_ends_it_as_env_error() -> None:
    ep = agentharness.make(TASK, difficulty="easy").reset(seed=0)
    pid = _server_pid(ep)
    ep.step(_call("add", {"a": 1, "b": 1}))
    obs = ep.step(_call("crash", {}, 2))
    assert obs.done and ep.end_reason == "env_error"
    assert "the MCP server stopped" in obs.messages[0].content
    assert ep.reward().total == 0.0
    assert _gone(pid)


@pytest.mark.parametrize("how", ["answered", "max_turns", "agent_error", "abandoned"])
def test_one_session_per_episode_closed_on_every_end(how: str) -> None:
    from agentharness.core.task import Budgets

    env = agentharness.make(TASK, difficulty="easy", budgets=Budgets(max_turns=2))
    ep, other = env.reset(seed=0), env.reset(seed=0)
    pid, other_pid = _server_pid(ep), _server_pid(other)
    assert pid != other_pid  # a server process per episode
    if how == "answered":
        ep.step(_call("submit", {"answer": "7"}))
    elif how == "max_turns":
        ep.step(_call("add", {"a": 1, "b": 1}))
        ep.step(_call("add", {"a": 1, "b": 1}, 2))
    elif how == "agent_error":
        ep.finish("agent_error", error="endpoint down")
    else:
        ep.close()  # dropped before it ended (e.g. the env server's ttl)
    assert ep.end_reason == (None if how == "abandoned" else how)
    assert _gone(pid)
    assert other.world.execute("add", {"a": 1, "b": 2}).text == "3"  # untouched
    other.close()
    assert _gone(other_pid)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "mcp_server.py"), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_streamable_http_server(http_server: str) -> None:
    task = f"mcp:{http_server}#mcp_rewards:score"
    spec = get_task(task)
    inst = spec.instance(1, "easy")
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    assert ep.end_reason == "answered" and ep.reward().success
    assert ep.world.conn is not None and ep.world.conn.closed  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("address", "message"),
    [
        (f"mcp:{SERVER}", "needs a server and a reward callable"),
        (f"mcp:{SERVER}#mcp_rewards", "not a reward callable"),
        (f"mcp:{SERVER}#no_such_module:score", "cannot import the reward module"),
        (f"mcp:{SERVER}#mcp_rewards:nothing", "has no callable 'nothing'"),
        ("mcp:/no/such/command#mcp_rewards:score", "could not list the tools"),
    ],
)
def test_bad_addresses_say_what_is_wrong(address: str, message: str) -> None:
    with pytest.raises(UnknownTaskError, match=message):
        get_task(address)


def test_a_reward_callable_that_raises_scores_zero() -> None:
    ep = agentharness.make(f"mcp:{SERVER}#mcp_rewards:broken", difficulty="easy").reset(seed=0)
    ep.step(_call("submit", {"answer": "1"}))
    assert ep.reward().total == 0.0 and "raised RuntimeError: reward bug" in ep.reward().explanation


def test_eval_runs_and_logs_an_mcp_task(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentharness.cli.main import app
    from agentharness.store.run import RunDir

    out = tmp_path / "run"
    args = ["eval", "--agent", "expert", "--tasks", TASK, "-n", "2", "--difficulty", "easy"]
    result = CliRunner().invoke(app, [*args, "--quiet", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = list(RunDir(out).episodes())
    assert [r.task for r in records] == [TASK, TASK]
    assert all(r.end_reason == "answered" and r.reward.success for r in records)
    assert records[0].tool_calls[0].name == "add"
