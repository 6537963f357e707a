"""OpenEnv's reset/step/state contract on `bootcamp serve`, driven by OpenEnv's own client."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient  # the test extra installs openenv-core
from serve_helpers import ServerFactory

from agentharness import get_task
from agentharness.agents.textformat import as_plain_text
from agentharness.core.registry import episode_for


def expert_turns(task: str, seed: int, difficulty: str) -> tuple[list[dict[str, Any]], float]:
    """The expert's assistant turns (OpenAI dicts) and its reward, played in process."""
    spec = get_task(task)
    instance = spec.instance(seed, difficulty)
    episode, policy = episode_for(instance), spec.expert(instance)
    turns = []
    while not episode.done:
        message = policy.next_turn(list(episode.messages))
        turns.append(message.to_openai())
        episode.step(message)
    return turns, episode.reward().total


def test_openenvs_client_plays_an_episode_over_the_websocket(serve: ServerFactory) -> None:
    server = serve(max_sessions=4, ttl_s=60.0)
    turns, expected = expert_turns("escape_room", 3, "easy")
    with GenericEnvClient(base_url=server.base_url).sync() as env:
        result = env.reset(task="escape_room", seed=3, difficulty="easy")
        assert not result.done and result.reward is None
        obs = result.observation
        assert [m["role"] for m in obs["messages"]] == ["system", "user"]
        assert {t["function"]["name"] for t in obs["tools"]} >= {"look", "go", "enter_code"}
        assert obs["metadata"]["task"] == get_task("escape_room").id
        for i, turn in enumerate(turns):
            result = env.step({"message": turn})
            assert result.done == (i == len(turns) - 1)
            assert result.observation["messages"][0]["role"] == "tool"
        assert result.reward == pytest.approx(expected)
        assert result.observation["metadata"]["reward"]["total"] == pytest.approx(expected)
        state = env.state()
        assert state["step_count"] == len(turns) and state["done"]
        # plain text turns work too, and a finished episode refuses more
        with pytest.raises(RuntimeError, match="has ended"):
            env.step({"message": "more?"})
        result = env.reset(task="escape_room", seed=3, difficulty="easy")
        text = as_plain_text(_message(turns[0])).text
        result = env.step({"message": text})
        assert result.observation["messages"][0]["role"] == "tool" and not result.done
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"nothing": 1})
    assert len(server.app.state.sessions) == 0  # closing the connection frees the episode


def test_the_http_face_of_the_contract(serve: ServerFactory) -> None:
    server = serve(max_sessions=2, ttl_s=60.0)
    turns, expected = expert_turns("escape_room", 1, "easy")
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        r = http.post("/reset", json={"task": "escape_room", "seed": 1, "difficulty": "easy"})
        assert r.status_code == 200
        body = r.json()
        assert set(body) == {"observation", "reward", "done"}
        episode_id = body["observation"]["episode_id"]
        for turn in turns:
            r = http.post("/step", json={"action": {"message": turn}, "episode_id": episode_id})
            assert r.status_code == 200, r.text
        assert r.json()["done"] and r.json()["reward"] == pytest.approx(expected)
        state = http.get("/state", params={"episode_id": episode_id}).json()
        assert state["step_count"] == len(turns) and state["done"]
        assert set(http.get("/schema").json()) == {"action", "observation", "state"}
        assert http.get("/metadata").json()["name"] == "agentharness"
        # bad input: one clear line each
        r = http.post("/step", json={"action": {"message": "x"}})
        assert r.status_code == 422 and "episode_id" in r.json()["detail"]
        r = http.post("/reset", json={"task": "no_such_task"})
        assert r.status_code == 422 and "no_such_task" in r.json()["detail"]
        http.post("/reset", json={"task": "escape_room"})
        r = http.post("/reset", json={"task": "escape_room"})  # the third episode: full
        assert r.status_code == 429


def _message(turn: dict[str, Any]) -> Any:
    from agentharness.core.messages import coerce_message

    return coerce_message(turn)
