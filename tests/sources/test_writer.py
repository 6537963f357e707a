"""bootcamp convert: the LLM task writer, against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))

from writer_session import NAME, SPEC, Session

from agentharness.cli.main import app
from agentharness.sources.writer import run_check
from agentharness.testing.openai_server import ScriptedOpenAIServer


def _convert(tmp_path: Path, session: Session, *extra: str) -> tuple[int, str, Path]:
    spec = tmp_path / "numguess.md"
    spec.write_text(SPEC)
    out = tmp_path / "pkg"
    with ScriptedOpenAIServer(policy=session) as server:
        result = CliRunner().invoke(
            app,
            [
                "convert",
                str(spec),
                "--agent",
                "openai",
                "--model",
                "scripted",
                "--base-url",
                server.base_url,
                "-o",
                str(out),
                "--no-install",
                *extra,
            ],
        )
    return result.exit_code, result.output, out


def test_a_failing_attempt_is_repaired_from_the_feedback(tmp_path: Path) -> None:
    session = Session(repair=True)
    code, output, out = _convert(tmp_path, session)
    assert code == 0, output
    assert "attempt 1: failed" in output and "attempt 2: passed" in output
    assert f"{NAME}: the check and its tests pass" in output
    # The model was shown the failure before it repaired the expert.
    assert "FAIL expert_solves" in session.seen[6] and "attempt 1: FAILED" in session.seen[6]
    attempts = [
        json.loads(line) for line in (out / ".convert/attempts.jsonl").read_text().splitlines()
    ]
    assert [a["passed"] for a in attempts] == [False, True]
    assert "self.last + 1" not in attempts[0]["files"]["numguess/expert.py"]
    assert "self.last + 1" in attempts[1]["files"]["numguess/expert.py"]
    transcript = json.loads((out / ".convert/transcript.json").read_text())
    assert transcript["end_reason"] == "answered" and transcript["final_check"]["passed"]
    # What was written is a real, passing package.
    assert run_check(out, NAME).passed


def test_a_package_that_fails_is_never_registered(tmp_path: Path) -> None:
    code, output, out = _convert(tmp_path, Session(repair=False), "--max-checks", "1")
    assert code == 1
    assert "fails the check" in output and "was not registered" in output
    assert (out / ".convert/attempts.jsonl").exists()


@pytest.mark.parametrize("sandbox", ["namespace", "socket_guard"])
def test_checks_run_without_network(
    tmp_path: Path, sandbox: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package's tests cannot reach even a server listening on this machine's loopback."""
    from agentharness.sources import writer
    from agentharness.sources.scaffold import write_package

    if sandbox == "socket_guard":
        monkeypatch.setattr(writer, "sandbox_prefix", lambda: ())
    elif not writer.sandbox_prefix():
        pytest.skip("unshare cannot make a network namespace here")
    out = tmp_path / "netprobe"
    write_package("netprobe", out)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        probe = (
            "import socket\n\n\ndef test_reach_the_host():\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
        )
        (out / "tests" / "test_net.py").write_text(probe)
        outcome = run_check(out, "netprobe")
    assert outcome.check_passed and not outcome.tests_passed
    assert "test_reach_the_host" in outcome.output
    refusals = ("Network is unreachable", "Connection refused", "network access is disabled")
    assert any(r in outcome.output for r in refusals), outcome.output[-1500:]
    # The probe itself works when not sandboxed, so the refusal above is the sandbox's.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        socket.create_connection(listener.getsockname(), timeout=5).close()


def test_bad_spec_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["convert", str(tmp_path / "missing.md"), "--model", "m", "--no-install"]
    )
    assert result.exit_code == 2 and "does not exist" in result.output
    (tmp_path / "x.md").write_text("a task")
    result = CliRunner().invoke(app, ["convert", str(tmp_path / "x.md"), "--no-install"])
    assert result.exit_code == 2 and "needs --model" in result.output


def test_an_unreachable_server_is_one_line_before_anything_is_written(tmp_path: Path) -> None:
    spec = tmp_path / "numguess.md"
    spec.write_text(SPEC)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    result = CliRunner().invoke(
        app,
        [
            "convert",
            str(spec),
            "--model",
            "m",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "-o",
            str(tmp_path / "pkg"),
            "--no-install",
        ],
    )
    assert result.exit_code == 2
    assert "cannot reach the model server" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "pkg").exists()


def _finish_at_once(body: dict[str, object]) -> dict[str, object]:
    call = {"name": "finish", "arguments": json.dumps({"summary": "done"})}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": call}],
    }


def test_a_writer_that_writes_nothing_does_not_pass_off_the_scaffold(tmp_path: Path) -> None:
    """The untouched scaffold passes the check, but it is the example task, not the spec's."""
    code, output, _ = _convert(tmp_path, _finish_at_once)  # type: ignore[arg-type]
    assert code == 1
    assert "wrote no file" in output and "not registered" in output
    assert "the check and its tests pass" not in output


class _FailingAgent:
    name = "failing"

    def policy(self, instance: object, sample: int = 0) -> _FailingAgent:
        return self

    async def act(self, messages: object, tools: object) -> object:
        from agentharness.agents import AgentError

        raise AgentError("http://x/v1: gave up after 6 attempts; last error: refused")

    async def aclose(self) -> None:
        return None


def test_a_writing_agent_that_fails_registers_nothing(tmp_path: Path) -> None:
    import asyncio

    from agentharness.sources.writer import convert

    result = asyncio.run(
        convert(SPEC, NAME, tmp_path / "pkg", _FailingAgent(), register=True)  # type: ignore[arg-type]
    )
    assert result.end_reason == "agent_error" and not result.registered and not result.passed
    assert result.problem is not None and "gave up after 6 attempts" in result.problem
