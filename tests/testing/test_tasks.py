"""The task-testing helpers shared by every task's tests."""

from __future__ import annotations

from toy_task import GUESS

from agentharness.agents.scripted import ExpertAgent, NothingAgent
from agentharness.testing.tasks import call, episode, run_agent, run_expert, scores, step_call


def test_helpers_build_turns_and_play_episodes() -> None:
    turn = call("probe", {"guess": 5}, "x9")
    assert turn.tool_calls is not None and turn.tool_calls[0].id == "x9"
    ep = episode("guess", seed=2, difficulty="easy")
    reply = step_call(ep, "probe", {"guess": 0})
    assert reply.role == "tool" and reply.outcome is not None and reply.outcome.is_error
    inst = GUESS.instance(4, "easy")
    assert episode(inst).instance is inst
    assert run_expert(inst).reward().success
    assert run_expert(inst, noise=0.5, seed=1).messages != run_expert(inst).messages
    assert run_agent(ExpertAgent(), inst).reward().success
    assert scores(NothingAgent(), [inst, GUESS.instance(5, "easy")]) == (0.0, 0.0)
