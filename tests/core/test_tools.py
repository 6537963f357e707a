from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Literal

import pytest
from pydantic import Field

from agentharness.core import Instance, ToolError, ToolResult, World, tool

RELEASE = threading.Event()  # lets Lab.submit_late return


def _instance() -> Instance:
    return Instance(task="t-v1", seed=0, difficulty="easy", config={}, public={}, hidden={})


class Lab(World):
    @tool
    def measure(
        self,
        values: Annotated[list[float], Field(min_length=1, max_length=4)],
        mode: Literal["mean", "max"] = "mean",
    ) -> dict[str, float]:
        """Summarize some numbers.

        Args:
            values: the numbers, one to four of them.
            mode: how to summarize
                them (continued line).
        """
        return {"result": max(values) if mode == "max" else sum(values) / len(values)}

    @tool
    def explode(self) -> str:
        """Always fails."""
        raise RuntimeError("boom")

    @tool
    def refuse(self, x: int) -> str:
        """Refuses with a fixable message.

        Args:
            x: anything.
        """
        raise ToolError("x must be even; try 2")

    @tool(timeout_s=0.2)
    def slow(self) -> str:
        """Sleeps too long."""
        time.sleep(1.0)
        return "late"

    @tool(timeout_s=0.3)
    def brief(self) -> str:
        """Takes 0.1 s, within its timeout."""
        time.sleep(0.1)
        return "brief"

    @tool(final=True, timeout_s=0.2)
    def submit_late(self, answer: int) -> str:
        """Submit, returning only once the test releases it.

        Args:
            answer: the answer.
        """
        RELEASE.wait(timeout=30)
        return "accepted"

    @tool(final=True)
    def submit(self, answer: int) -> ToolResult:
        """Submit.

        Args:
            answer: the answer.
        """
        return ToolResult(text="ok", step_reward=0.5, metrics={"a": 1.0})


def test_schema_from_signature_and_docstring() -> None:
    schemas = {s["function"]["name"]: s["function"] for s in Lab.tool_schemas()}
    measure = schemas["measure"]
    assert measure["description"] == "Summarize some numbers."
    props = measure["parameters"]["properties"]
    assert props["values"]["description"] == "the numbers, one to four of them."
    assert props["values"]["maxItems"] == 4 and props["values"]["items"]["type"] == "number"
    assert props["mode"]["enum"] == ["mean", "max"]
    assert props["mode"]["description"] == "how to summarize them (continued line)."
    assert measure["parameters"]["required"] == ["values"]
    assert measure["parameters"]["additionalProperties"] is False
    assert "title" not in str(measure["parameters"])


def test_valid_call_returns_json() -> None:
    r = Lab(_instance()).execute("measure", {"values": [1, 2, 6], "mode": "max"})
    assert not r.is_error and r.text == '{"result": 6.0}'


@pytest.mark.parametrize(
    "args, fragment",
    [
        ({}, "values: Field required"),
        ({"values": []}, "values"),
        ({"values": [1, 2, 3, 4, 5]}, "at most 4"),
        ({"values": ["a"]}, "values.0"),
        ({"values": [float("nan")]}, "finite"),
        ({"values": [1], "mode": "median"}, "mode"),
        ({"values": [1], "extra": 1}, "extra: unexpected argument"),
        ("{not json", "not valid JSON"),
        ("[1]", "must be a JSON object"),
    ],
)
def test_bad_arguments_are_error_messages(args: object, fragment: str) -> None:
    r = Lab(_instance()).execute("measure", args)  # type: ignore[arg-type]
    assert r.is_error and r.text.startswith("Error:") and fragment in r.text


def test_unknown_tool_lists_available() -> None:
    r = Lab(_instance()).execute("nope", {})
    assert r.is_error and "measure" in r.text and "submit" in r.text


def test_exceptions_become_messages() -> None:
    world = Lab(_instance())
    assert world.execute("explode", {}).text == "Error: RuntimeError: boom"
    assert world.execute("refuse", {"x": 1}).text == "Error: x must be even; try 2"


def test_timeout_sync_and_async() -> None:
    world = Lab(_instance())
    assert "timed out after 0.2 s" in world.execute("slow", {}).text
    assert "timed out" in asyncio.run(Lab(_instance()).aexecute("slow", {})).text


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_answer_whose_call_timed_out_is_not_recorded(mode: str) -> None:
    """The agent is told a call that outran its timeout failed, so the answer it returns
    later must not count (the reward reads ``final_answer``)."""
    RELEASE.clear()
    world = Lab(_instance())
    if mode == "sync":
        r = world.execute("submit_late", {"answer": 3})
    else:
        r = asyncio.run(world.aexecute("submit_late", {"answer": 3}))
    assert r.is_error and not r.done
    assert "timed out after 0.2 s" in r.text and "answer was not recorded" in r.text
    RELEASE.set()  # the abandoned call returns now; the world's next call waits for it
    assert not world.execute("measure", {"values": [1]}).is_error
    assert world.final_answer is None
    again = world.execute("submit", {"answer": 4})
    assert again.done and world.final_answer == {"answer": 4}


def test_an_answer_arriving_after_its_episode_was_stopped_is_not_recorded() -> None:
    RELEASE.clear()
    world = Lab(_instance())

    async def stopped() -> None:
        call = asyncio.ensure_future(world.aexecute("submit_late", {"answer": 3}))
        await asyncio.sleep(0)  # the call is running
        call.cancel()  # as an episode timeout does
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(stopped())
    RELEASE.set()
    assert not world.execute("measure", {"values": [1]}).is_error  # waits for the late call
    assert world.final_answer is None


def test_a_call_finished_as_its_timeout_ran_out_stands() -> None:
    from agentharness.core.tools import _Call

    finished_first = _Call()
    assert finished_first.finish() and not finished_first.abandon()  # its result is returned
    abandoned_first = _Call()
    assert abandoned_first.abandon() and not abandoned_first.finish()  # its answer is dropped


def test_final_tool_records_answer_and_ends() -> None:
    world = Lab(_instance())
    r = world.execute("submit", {"answer": "7"})  # lax: numeric string accepted
    assert r.done and r.end_reason == "answered" and r.step_reward == 0.5
    assert world.final_answer == {"answer": 7}


def test_failed_final_call_records_nothing() -> None:
    world = Lab(_instance())
    r = world.execute("submit", {"answer": "seven"})
    assert r.is_error and not r.done and world.final_answer is None


def test_tool_named_like_world_attribute_is_rejected() -> None:
    class Bad(World):
        @tool
        def execute(self) -> str:  # type: ignore[override]
            """Shadows the executor."""
            return ""

    with pytest.raises(TypeError, match="World attribute"):
        Bad.tool_specs()


def test_a_tool_error_can_carry_data() -> None:
    class Gate(World):
        @tool
        def knock(self) -> str:
            """Knock."""
            raise ToolError("no knocks left", data={"knocks_left": 0})

    result = Gate(_instance()).execute("knock", {})
    assert result.is_error and result.text == "Error: no knocks left"
    assert result.data == {"knocks_left": 0}


def test_a_copy_with_other_data_answers_from_that_data() -> None:
    from pydantic import BaseModel, ValidationError

    class Secret(BaseModel):
        code: int

    inst = Instance(
        task="t-v1", seed=0, difficulty="easy", config={}, public={}, hidden={"code": 7}
    )
    assert inst.hidden_as(Secret).code == 7
    blind = inst.model_copy(update={"hidden": {}})
    with pytest.raises(ValidationError):
        blind.hidden_as(Secret)  # not the cached view of the real hidden data


def test_a_call_given_up_on_while_it_queued_never_runs() -> None:
    """The world runs one call at a time: a call that timed out waiting behind a stuck one
    must not change the world when its turn comes (nobody reads its result)."""
    RELEASE.clear()
    world = Lab(_instance())
    assert world.execute("submit_late", {"answer": 3}).is_error  # stuck, holds the world
    queued = world.execute("submit_late", {"answer": 5})  # times out waiting for the world
    assert queued.is_error and "timed out" in queued.text
    RELEASE.set()
    assert world.wait_idle(10)
    assert not world.execute("measure", {"values": [1]}).is_error  # after any queued call
    assert world.tool_calls_made == 2  # the stuck call and measure; the queued one never ran
    assert world.final_answer is None


def test_a_reader_waits_for_a_running_call_or_is_told_it_still_runs() -> None:
    RELEASE.clear()
    world = Lab(_instance())
    assert world.wait_idle(0) and asyncio.run(world.await_idle(0))
    assert world.execute("submit_late", {"answer": 3}).is_error  # still running
    assert not world.wait_idle(0.05) and not asyncio.run(world.await_idle(0.05))
    with world.settled(0.05) as still:
        assert not still
    RELEASE.set()
    assert asyncio.run(world.await_idle(10))
    with world.settled(10) as still:
        assert still
        late = threading.Thread(target=world.execute, args=("measure", {"values": [1]}))
        late.start()
        late.join(0.2)
        assert late.is_alive() and world.tool_calls_made == 1  # no call runs while held
    late.join(10)
    assert world.tool_calls_made == 2


@pytest.fixture
def one_tool_thread(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Every call of every world on one tool thread, so calls queue for it."""
    from concurrent.futures import ThreadPoolExecutor

    from agentharness.core import tools

    pool = ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(tools, "_TOOL_POOL", pool)
    yield tools
    pool.shutdown(wait=False, cancel_futures=True)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_time_queued_behind_other_worlds_calls_is_not_the_tools(one_tool_thread, mode: str) -> None:  # type: ignore[no-untyped-def]
    """``brief`` (0.1 s of its 0.3 s) waits 0.5 s for the thread another world's stuck
    call holds: its clock starts when it runs, so it succeeds."""
    RELEASE.clear()
    assert Lab(_instance()).execute("submit_late", {"answer": 1}).is_error  # holds the thread
    threading.Timer(0.5, RELEASE.set).start()
    world = Lab(_instance())
    if mode == "sync":
        r = world.execute("brief", {})
    else:
        r = asyncio.run(world.aexecute("brief", {}))
    assert not r.is_error and r.text == "brief"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_call_that_never_gets_a_tool_thread_is_an_error_and_never_runs(  # type: ignore[no-untyped-def]
    one_tool_thread, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(one_tool_thread, "QUEUE_LIMIT_S", 0.2)
    RELEASE.clear()
    Lab(_instance()).execute("submit_late", {"answer": 1})  # holds the only thread
    world = Lab(_instance())
    if mode == "sync":
        r = world.execute("brief", {})
    else:
        r = asyncio.run(world.aexecute("brief", {}))
    assert r.is_error and "did not start" in r.text and "fewer episodes" in r.text
    RELEASE.set()
    assert world.wait_idle(10)
    one_tool_thread._TOOL_POOL.submit(lambda: None).result(timeout=10)  # the queue drained
    assert world.tool_calls_made == 0  # the given-up call never ran
