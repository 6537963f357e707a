"""rg: reasoning-gym datasets as single-answer tasks scored by the dataset's own scorer."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym")

import agentharness
from agentharness.conformance import check_task
from agentharness.core.messages import ToolCall, assistant
from agentharness.core.registry import UnknownTaskError, get_task
from agentharness.core.task import TaskConfigError


def _answer(text: str) -> dict:
    return assistant(tool_calls=[ToolCall.make("a1", "answer", {"answer": text})]).model_dump()


def test_dataset_items_follow_seed_and_difficulty() -> None:
    import reasoning_gym

    spec = get_task("rg:leg_counting")
    assert spec.id == "rg:leg_counting" and list(spec.difficulties) == ["easy", "medium", "hard"]
    inst = spec.instance(5, "medium")
    assert inst == spec.instance(5, "medium") and inst != spec.instance(6, "medium")
    # The seed is passed through: the same question as reasoning-gym's own item.
    plain = spec.instance(5, "medium", level=None)
    direct = reasoning_gym.create_dataset("leg_counting", seed=5, size=1)[0]
    assert plain.public["question"] == direct["question"]

    # Difficulty is the curriculum level: harder levels ask about more animals.
    def kinds(question: str) -> int:
        return question.split("you have")[1].count(",") + 1

    easy = [kinds(spec.instance(s, "easy").public["question"]) for s in range(8)]
    hard = [kinds(spec.instance(s, "hard").public["question"]) for s in range(8)]
    assert sum(hard) > sum(easy)
    # Dataset config fields pass through as a knob.
    many = spec.instance(5, "medium", level=None, config={"min_animals": 9, "max_animals": 9})
    assert kinds(many.public["question"]) == 9
    with pytest.raises(TaskConfigError):
        spec.instance(0, "medium", colour="red")


def test_scored_by_the_datasets_scorer() -> None:
    env = agentharness.make("rg:basic_arithmetic", difficulty="easy")
    ep = env.reset(seed=3)
    ep.step(_answer(ep.instance.hidden["answer"]))
    assert ep.end_reason == "answered" and ep.reward().total == 1.0 and ep.reward().success
    ep = env.reset(seed=3)
    ep.step(_answer("not a number"))
    assert ep.reward().total == 0.0 and not ep.reward().success
    ep = env.reset(seed=3)
    ep.step({"role": "assistant", "content": "I think it is 4."})
    assert not ep.done and ep.reward().explanation == "no answer submitted"


def test_a_scorer_that_raises_scores_zero_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from reasoning_gym.arithmetic.leg_counting import LegCountingDataset

    def broken(self: object, answer: str | None, entry: dict) -> float:
        raise KeyError("metadata")

    ep = agentharness.make("rg:leg_counting").reset(seed=1)
    monkeypatch.setattr(LegCountingDataset, "score_answer", broken)
    ep.step(_answer(ep.instance.hidden["answer"]))
    reward = ep.reward()
    assert reward.total == 0.0 and "scorer raised KeyError" in reward.explanation


def test_unknown_dataset_suggests_names() -> None:
    with pytest.raises(UnknownTaskError, match="did you mean rg:leg_counting"):
        get_task("rg:leg_countin")
    with pytest.raises(UnknownTaskError, match="unknown reasoning-gym dataset 'zzz'"):
        get_task("rg:zzz")


@pytest.mark.parametrize("task", ["rg:leg_counting", "rg:basic_arithmetic"])
def test_passes_the_check(task: str) -> None:
    report = check_task(get_task(task), seeds=2)
    assert report.passed, [(r.name, r.detail) for r in report.results if not r.passed]
