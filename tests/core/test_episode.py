from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest
from toy_task import GUESS, GuessWorld

from agentharness import Budgets, make
from agentharness.core import tool
from agentharness.core.episode import Episode
from agentharness.core.messages import Message, ToolCall


def call(name: str, **args: object) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall.make(f"c_{name}", name, args)])


def test_reset_gives_prompt_and_tools(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    assert [m.role for m in ep.messages] == ["system", "user"]
    assert {t["function"]["name"] for t in ep.tools} == {"probe", "answer", "picture"}
    assert not ep.done and ep.turns == 0


def test_step_runs_tools_and_answer_ends(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    secret = ep.instance.hidden["secret"]
    obs = ep.step(call("probe", guess=secret))
    assert obs.messages[0].role == "tool" and obs.messages[0].text == "correct" and not obs.done
    obs = ep.step(call("answer", number=secret))
    assert obs.done and obs.end_reason == "answered"
    reward = ep.reward()
    assert reward.success and reward.total > 0.9
    assert [c.name for c in ep.tool_calls] == ["probe", "answer"]


def test_text_tool_calls_are_parsed(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    obs = ep.step(
        'Let me try.\n<tool_call>{"name": "probe", "arguments": {"guess": 1}}</tool_call>'
    )
    assert obs.messages[0].role == "tool" and obs.messages[0].tool_call_id == "call_1_0"


def test_nudges_then_no_answer(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    for _ in range(ep.budgets.max_nudges):
        obs = ep.step("I think it is 5.")
        assert not obs.done and "did not call a tool" in obs.messages[0].text
    obs = ep.step("Still 5.")
    assert obs.done and obs.end_reason == "no_answer"
    assert ep.nudges == ep.budgets.max_nudges
    assert ep.reward().total == 0.0


def test_format_errors_are_feedback_then_end() -> None:
    ep = make("guess", budgets=Budgets(max_format_errors=1)).reset(seed=1)
    obs = ep.step("<tool_call>{oops</tool_call>")
    assert obs.format_error and not obs.done and obs.messages[0].text.startswith("Format error")
    obs = ep.step("<tool_call>{oops again</tool_call>")
    assert obs.done and obs.end_reason == "format_error"


def test_bad_arguments_do_not_end_episode(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    obs = ep.step(call("probe", guess="many"))
    assert not obs.done and obs.messages[0].text.startswith("Error: invalid arguments")
    assert ep.tool_calls[0].is_error


def test_turn_and_tool_budgets() -> None:
    ep = make("guess", budgets=Budgets(max_turns=2)).reset(seed=1)
    ep.step(call("probe", guess=1))
    obs = ep.step(call("probe", guess=2))
    assert obs.done and obs.end_reason == "max_turns"

    ep = make("guess", budgets=Budgets(max_tool_calls=3)).reset(seed=1)
    many = Message(
        role="assistant",
        tool_calls=[ToolCall.make(f"c{i}", "probe", {"guess": i + 1}) for i in range(5)],
    )
    obs = ep.step(many)
    assert len(ep.tool_calls) == 3 and obs.done and obs.end_reason == "max_tool_calls"


def test_image_results_follow_tool_messages(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    obs = ep.step(call("picture"))
    assert [m.role for m in obs.messages] == ["tool", "user"]
    assert obs.messages[1].images[0].png_bytes().startswith(b"\x89PNG")


def test_stepping_a_finished_episode_is_a_clear_error(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    ep.finish("timeout")
    try:
        ep.step("hello")
    except RuntimeError as e:
        assert "already ended (timeout)" in str(e)
    else:
        raise AssertionError("expected RuntimeError")


def test_async_step_matches_sync(guess_env) -> None:
    a, b = guess_env.reset(seed=5), guess_env.reset(seed=5)
    turn = call("probe", guess=50)
    sync = a.step(turn)
    asyn = asyncio.run(b.astep(turn))
    assert sync.messages == asyn.messages


def test_non_assistant_garbage_turn_is_feedback(guess_env) -> None:
    ep = guess_env.reset(seed=3)
    obs = ep.step({"role": "assistant", "content": 12345})  # type: ignore[dict-item]
    assert obs.format_error and not obs.done


def test_tool_results_are_recorded_as_data_beside_the_text(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentharness.core import Instance, World, tool
    from agentharness.store.run import RunDir

    class Lab(World):
        @tool
        def measure(self, x: int) -> dict[str, int]:
            """Measure.

            Args:
                x: input.
            """
            return {"double": 2 * x}

    env = make("guess", difficulty="easy")
    ep = env.reset(seed=1)
    obs = ep.step(call("probe", guess=0))  # the tool refuses: an error outcome
    (refused,) = obs.messages
    assert refused.outcome is not None and refused.outcome.is_error and refused.outcome.data is None
    assert ep.tool_calls[-1].is_error and ep.tool_calls[-1].data is None
    assert "outcome" not in refused.to_openai()  # never sent to a model

    inst = Instance(task="x-v1", seed=0, difficulty="easy", config={}, public={}, hidden={})
    result = Lab(inst).execute("measure", {"x": 4})
    assert result.data == {"double": 8} and result.text == '{"double": 8}'

    obs = ep.step(call("probe", guess=3))
    assert obs.messages[0].outcome is not None and not obs.messages[0].outcome.is_error
    ep.step(call("answer", number=3))
    from agentharness.store.schema import EpisodeRecord, Timings

    record = EpisodeRecord.from_episode(ep, agent="t", sample=0, timings=Timings(started_at=0.0))
    run = RunDir(tmp_path)
    run.create({})
    run.append(record)
    (back,) = list(run.episodes())
    assert back == record and back.messages[3].outcome == refused.outcome


def test_runaway_turns_are_cut_and_still_logged(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentharness.core.episode import MAX_TOOL_RESULT_CHARS, MAX_TURN_CHARS
    from agentharness.store.run import RunDir
    from agentharness.store.schema import EpisodeRecord, Timings

    ep = make("guess", difficulty="easy").reset(seed=1)
    deep: object = {"guess": 5}
    for _ in range(400):
        deep = {"x": deep}
    obs = ep.step(Message(role="assistant", tool_calls=[ToolCall.make("d", "probe", deep)]))
    assert obs.format_error and "more than 32 levels" in obs.messages[-1].text
    assert ep.tool_calls == []
    huge = "word " * 20_000 + '<tool_call>{"name": "probe", "arguments": {"guess": 7}}</tool_call>'
    obs = ep.step(huge)
    kept = ep.messages[-len(obs.messages) - 1]
    assert len(kept.text) < MAX_TURN_CHARS + 100 and "more characters cut" in kept.text
    assert obs.format_error and "only the first" in obs.messages[-1].text
    ep.step(Message(role="assistant", content="ok", reasoning_content="hmm " * 20_000))
    assert len(ep.messages[-2].reasoning_content or "") < MAX_TURN_CHARS + 100
    from agentharness.core.episode import _capped_result
    from agentharness.core.tools import ToolResult

    big = _capped_result(ToolResult(text="z" * 100_000, images=(b"png",) * 20))
    assert len(big.text) < MAX_TOOL_RESULT_CHARS + 100 and big.text.endswith("characters cut]")
    assert len(big.images) == 8
    ep.step(call("answer", number=3))
    record = EpisodeRecord.from_episode(ep, agent="t", sample=0, timings=Timings(started_at=0.0))
    run = RunDir(tmp_path)
    run.create({})
    run.append(record)  # the deep arguments never reach the log
    assert next(iter(run.episodes())).turns == 4


def test_calls_after_the_one_that_ends_the_episode_do_not_run(guess_env) -> None:
    """A turn that answers twice: the first answer ends the episode and is the one the
    reward reads; the call after it is answered as not run, in step and astep alike."""
    for stepping in ("step", "astep"):
        ep = guess_env.reset(seed=3)
        secret = ep.instance.hidden["secret"]
        turn = Message(
            role="assistant",
            tool_calls=[
                ToolCall.make("a", "answer", {"number": secret}),
                ToolCall.make("b", "answer", {"number": secret + 1}),
                ToolCall.make("c", "probe", {"guess": 1}),
            ],
        )
        obs = ep.step(turn) if stepping == "step" else asyncio.run(ep.astep(turn))
        assert obs.done and ep.end_reason == "answered"
        assert ep.world.final_answer == {"number": secret} and ep.reward().success
        assert [c.is_error for c in ep.tool_calls] == [False, True, True]
        assert all("not run" in c.result for c in ep.tool_calls[1:])
        assert ep.world.probes == 0  # type: ignore[attr-defined]


class _StallingWorld(GuessWorld):
    """A guess world whose ``stall`` outruns its timeout, then changes the world."""

    gate = threading.Event()

    @tool(timeout_s=0.05)
    def stall(self) -> str:
        """Hold the world until the test opens the gate, then count 100 probes."""
        self.gate.wait(timeout=30)
        self.probes += 100
        return "done"


@pytest.mark.parametrize("returns_in_time", [True, False])
def test_the_reward_reads_the_world_after_a_call_given_up_on(
    returns_in_time: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An episode that ends while a timed-out call still runs is scored once that call
    has returned (never mid-change), or, if it is still running after SETTLE_S, zero
    with the reason."""
    from agentharness.core import episode as episode_module

    monkeypatch.setattr(episode_module, "SETTLE_S", 10.0 if returns_in_time else 0.1)
    spec = dataclasses.replace(GUESS, world=_StallingWorld)
    _StallingWorld.gate.clear()
    ep = Episode(spec=spec, instance=spec.instance(0, "easy"), budgets=Budgets(max_turns=1))
    opener = threading.Timer(0.3, _StallingWorld.gate.set) if returns_in_time else None
    if opener:
        opener.start()
    obs = ep.step(Message(role="assistant", tool_calls=[ToolCall.make("a", "stall", {})]))
    assert obs.done and ep.end_reason == "max_turns" and ep.tool_calls[0].is_error
    reward = ep.reward()
    _StallingWorld.gate.set()
    if returns_in_time:  # efficiency 1 / (1 + probes / 10): read after the 100 probes
        assert reward.component("efficiency") == pytest.approx(1 / 11)
    else:
        assert reward.total == 0.0 and not reward.components
        assert "not scored" in reward.explanation and "still running" in reward.explanation


def test_astep_waits_for_a_call_given_up_on_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gate that lets the timed-out call return is opened by a coroutine on the same
    loop, so the episode is scored only if its wait leaves the loop free."""
    from agentharness.core import episode as episode_module

    monkeypatch.setattr(episode_module, "SETTLE_S", 3.0)
    spec = dataclasses.replace(GUESS, world=_StallingWorld)
    _StallingWorld.gate.clear()
    ep = Episode(spec=spec, instance=spec.instance(0, "easy"), budgets=Budgets(max_turns=1))

    async def open_gate() -> None:
        await asyncio.sleep(0.3)
        _StallingWorld.gate.set()

    async def main() -> None:
        opener = asyncio.ensure_future(open_gate())
        await ep.astep(Message(role="assistant", tool_calls=[ToolCall.make("a", "stall", {})]))
        await opener

    asyncio.run(main())
    assert ep.end_reason == "max_turns"
    assert ep.reward().component("efficiency") == pytest.approx(1 / 11)


def test_astep_does_not_wait_twice_for_a_call_that_still_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After its off-loop wait ran out, the episode scores zero at once instead of waiting
    again, on the event loop, inside the reward."""
    from agentharness.core import episode as episode_module

    monkeypatch.setattr(episode_module, "SETTLE_S", 0.1)
    spec = dataclasses.replace(GUESS, world=_StallingWorld)
    _StallingWorld.gate.clear()
    ep = Episode(spec=spec, instance=spec.instance(0, "easy"), budgets=Budgets(max_turns=1))
    waits: list[float] = []
    settled = ep.world.settled

    def recording(timeout_s: float):  # type: ignore[no-untyped-def]
        waits.append(timeout_s)
        return settled(timeout_s)

    monkeypatch.setattr(ep.world, "settled", recording)
    turn = Message(role="assistant", tool_calls=[ToolCall.make("a", "stall", {})])
    asyncio.run(ep.astep(turn))
    _StallingWorld.gate.set()
    assert ep.end_reason == "max_turns" and "not scored" in ep.reward().explanation
    assert waits == [0.0]


@pytest.mark.parametrize("stepping", ["step", "astep"])
@pytest.mark.parametrize("returns_in_time", [True, False])
def test_a_nudge_does_not_read_a_world_a_timed_out_call_still_changes(
    stepping: str, returns_in_time: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn without a tool call is nudged from the world's state once the earlier
    timed-out call has returned; if it still runs, with a nudge that reads nothing."""
    from agentharness.core import Interaction
    from agentharness.core import episode as episode_module

    class Counting(Interaction[_StallingWorld]):
        def on_no_tool_call(self, instance, world, message, nudges):  # type: ignore[no-untyped-def]
            return f"No tool call. Probes so far: {world.probes}."

    monkeypatch.setattr(episode_module, "SETTLE_S", 10.0 if returns_in_time else 0.1)
    spec = dataclasses.replace(GUESS, world=_StallingWorld, interaction=Counting())
    _StallingWorld.gate.clear()
    ep = Episode(spec=spec, instance=spec.instance(0, "easy"), budgets=Budgets(max_turns=5))
    ep.step(Message(role="assistant", tool_calls=[ToolCall.make("a", "stall", {})]))
    assert not ep.done and ep.tool_calls[0].is_error  # timed out, still running
    if returns_in_time:
        threading.Timer(0.3, _StallingWorld.gate.set).start()
    silent = Message(role="assistant", content="thinking")
    obs = ep.step(silent) if stepping == "step" else asyncio.run(ep.astep(silent))
    _StallingWorld.gate.set()
    nudge = obs.messages[-1].text
    if returns_in_time:
        assert nudge == "No tool call. Probes so far: 100."  # read after the call returned
    else:
        assert nudge == episode_module.STILL_BUSY_NUDGE
