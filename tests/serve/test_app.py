"""The server's endpoints over real HTTP (a uvicorn server on a free port), with plain httpx.

What a non-Python trainer sees: status codes, bodies, headers and error messages.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import io
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image
from serve_helpers import GATE, FakeClock, ServerFactory, entered, gate, sessions_of
from typer.testing import CliRunner

import agentharness
from agentharness import get_task, make
from agentharness.core.messages import Message, ToolCall
from agentharness.serve import BackgroundServer


def call(name: str, **args: Any) -> dict[str, Any]:
    """A native tool-call turn as an OpenAI client would send it."""
    message = Message(role="assistant", tool_calls=[ToolCall.make(f"c_{name}", name, args)])
    return message.model_dump(mode="json", exclude_none=True)


@pytest.fixture
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        yield client


def open_episode(http: httpx.Client, **body: Any) -> dict[str, Any]:
    r = http.post("/episodes", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def error(r: httpx.Response, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"detail", "error"} and body["error"] == code
    return str(body["detail"])


# -- health and tasks -------------------------------------------------------------------
def test_health_reports_load_and_capacity(http: httpx.Client) -> None:
    assert http.get("/health").json() == {
        "ok": True,
        "version": agentharness.__version__,
        "sessions": 0,
        "capacity": 8,
        "ttl_s": 100.0,
        "expired": 0,
    }
    open_episode(http, task="guess", seed=1)
    assert http.get("/health").json()["sessions"] == 1
    assert http.get("/openapi.json").json()["paths"]["/episodes/{episode_id}/step"]


def test_tasks_lists_ids_modality_difficulties_and_knobs(http: httpx.Client) -> None:
    tasks = {t["id"]: t for t in http.get("/tasks").json()["tasks"]}
    tsp = get_task("tsp_vision").id
    assert {get_task("escape_room").id, tsp, "guess-v1"} <= set(tasks)
    assert tasks[tsp]["modality"] == "vision"
    assert tasks["guess-v1"]["difficulties"] == ["easy", "medium", "hard"]
    assert tasks["guess-v1"]["knobs"] == ["high"]


# -- opening episodes -------------------------------------------------------------------
def test_same_task_and_seed_give_the_same_episode_as_in_process(http: httpx.Client) -> None:
    a = open_episode(http, task="escape_room", seed=5, difficulty="easy")
    b = open_episode(http, task=get_task("escape_room").id, seed=5, difficulty="easy")
    local = make("escape_room", difficulty="easy").reset(seed=5)
    assert a["episode_id"] != b["episode_id"]
    for created in (a, b):
        assert created["task"] == get_task("escape_room").id and created["seed"] == 5
        assert created["instance_id"] == local.instance.instance_id
        assert created["messages"] == [m.model_dump(mode="json") for m in local.messages]
        assert created["tools"] == local.tools
        assert created["expires_in_s"] == 100.0
    other = open_episode(http, task="escape_room", seed=6, difficulty="easy")
    assert other["instance_id"] != a["instance_id"]


def test_knobs_budgets_and_a_drawn_seed(http: httpx.Client) -> None:
    created = open_episode(
        http, task="guess", difficulty="easy", knobs={"high": 7}, budgets={"max_turns": 1}
    )
    local = get_task("guess").instance(created["seed"], "easy", high=7)
    assert created["instance_id"] == local.instance_id and created["budgets"]["max_turns"] == 1
    # `config` is accepted as another name for the knobs.
    assert open_episode(http, task="guess", seed=1, config={"high": 7})["instance_id"] == (
        get_task("guess").instance(1, "medium", high=7).instance_id
    )


def test_an_episode_gets_the_budgets_the_task_gives_its_instance(http: httpx.Client) -> None:
    # harmony's turn budget grows with the altered notes (the n_errors knob)
    spec = get_task("harmony")
    created = open_episode(http, task="harmony", seed=0, difficulty="hard", knobs={"n_errors": 8})
    local = spec.instance(0, "hard", n_errors=8)
    assert created["budgets"]["max_turns"] == spec.interaction.budgets_for(local).max_turns == 22
    stored = open_episode(http, instance=local.model_dump(mode="json"))
    assert stored["budgets"] == created["budgets"]
    assert open_episode(http, task="harmony", seed=0)["budgets"]["max_turns"] == 16


def test_a_stored_instance_replays(http: httpx.Client) -> None:
    instance = get_task("guess").instance(4, "hard")
    created = open_episode(http, instance=instance.model_dump(mode="json"))
    assert created["instance_id"] == instance.instance_id and created["difficulty"] == "hard"
    detail = error(
        http.post("/episodes", json={"instance": instance.model_dump(mode="json"), "seed": 4}),
        422,
        "bad_request",
    )
    assert "cannot be combined with `instance`" in detail
    detail = error(
        http.post(
            "/episodes", json={"instance": instance.model_dump(mode="json"), "task": "escape_room"}
        ),
        422,
        "bad_request",
    )
    assert "`instance` is for guess-v1" in detail


def test_unknown_task_is_404_saying_where_tasks_are_listed(http: httpx.Client) -> None:
    detail = error(http.post("/episodes", json={"task": "nope", "seed": 1}), 404, "unknown_task")
    assert "unknown task 'nope'" in detail and "GET /tasks" in detail


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"difficulty": "impossible"}, "has no difficulty 'impossible'; choose one of easy"),
        ({"knobs": {"hgh": 5}}, "has no knob(s) hgh; its knobs are high"),
        ({"knobs": {"high": 1}}, "bad knob value for guess-v1"),
    ],
)
def test_bad_config_is_422_with_the_task_config_error(
    http: httpx.Client, body: dict[str, Any], says: str
) -> None:
    detail = error(http.post("/episodes", json={"task": "guess", **body}), 422, "bad_config")
    assert says in detail


def test_malformed_requests_are_422_naming_the_field(http: httpx.Client) -> None:
    detail = error(http.post("/episodes", json={"task": "guess", "seeds": 1}), 422, "bad_request")
    assert "seeds" in detail and "Extra inputs are not permitted" in detail
    assert "give `task`" in error(http.post("/episodes", json={}), 422, "bad_request")


def test_at_capacity_the_server_pushes_back_with_retry_after(
    serve: ServerFactory, clock: FakeClock
) -> None:
    server = serve(max_sessions=2, ttl_s=100.0, clock=clock, reap_interval_s=3600.0)
    with httpx.Client(base_url=server.base_url) as http:
        first = open_episode(http, task="guess", seed=1)
        clock.advance(40)
        open_episode(http, task="guess", seed=2)
        refused = http.post("/episodes", json={"task": "guess", "seed": 3})
        detail = error(refused, 429, "capacity")
        assert refused.headers["Retry-After"] == "60"  # when the first episode would expire
        assert "at capacity (2 open episodes)" in detail
        assert "DELETE /episodes/{id}" in detail and "--max-sessions" in detail
        assert http.get("/health").json()["sessions"] == 2
        http.delete(f"/episodes/{first['episode_id']}").raise_for_status()
        open_episode(http, task="guess", seed=3)


# -- stepping ---------------------------------------------------------------------------
def test_step_runs_tools_and_reports_done_and_step_reward(http: httpx.Client) -> None:
    created = open_episode(http, task="guess", seed=3, difficulty="easy")
    eid = created["episode_id"]
    secret = get_task("guess").instance(3, "easy").hidden["secret"]
    r = http.post(f"/episodes/{eid}/step", json={"turn": call("probe", guess=secret)})
    assert r.status_code == 200, r.text
    step = r.json()
    assert step["assistant"]["role"] == "assistant" and step["assistant"]["tool_calls"]
    assert [m["content"] for m in step["messages"]] == ["correct"]
    assert not step["done"] and step["turns"] == 1 and step["step_reward"] == 0.0
    step = http.post(f"/episodes/{eid}/step", json={"turn": call("answer", number=secret)}).json()
    assert step["done"] and step["end_reason"] == "answered"

    state = http.get(f"/episodes/{eid}").json()
    assert state["done"] and state["turns"] == 2 and len(state["messages"]) == 6
    assert [c["name"] for c in state["tool_calls"]] == ["probe", "answer"]
    reward = http.get(f"/episodes/{eid}/reward").json()
    assert reward["success"] and reward["total"] > 0.9
    assert {c["name"] for c in reward["components"]} == {"outcome", "efficiency"}

    detail = error(http.post(f"/episodes/{eid}/step", json={"turn": "more"}), 409, "episode_done")
    assert "has ended (answered, after 2 turns)" in detail and "POST /episodes" in detail


@pytest.mark.parametrize(
    ("turn", "feedback"),
    [
        ("I think it is 5.", "You did not call a tool"),
        ("<tool_call>{oops</tool_call>", "Format error"),
        ({"role": "assistant", "content": 123}, "Format error: the turn is not a valid assistant"),
        ({"content": "hi", "refusal": None, "annotations": []}, "You did not call a tool"),
        (call("probe", guess="five"), "invalid arguments for 'probe'"),
        (call("fly"), "unknown tool 'fly'"),
    ],
)
def test_a_malformed_turn_gets_feedback_not_an_http_error(
    http: httpx.Client, turn: Any, feedback: str
) -> None:
    eid = open_episode(http, task="guess", seed=1)["episode_id"]
    r = http.post(f"/episodes/{eid}/step", json={"turn": turn})
    assert r.status_code == 200, r.text
    step = r.json()
    assert feedback in step["messages"][-1]["content"] and not step["done"]


def test_reward_before_done_is_409(http: httpx.Client) -> None:
    eid = open_episode(http, task="guess", seed=1)["episode_id"]
    detail = error(http.get(f"/episodes/{eid}/reward"), 409, "not_done")
    assert "is not done (0 turns so far)" in detail and "done=true" in detail


def test_max_tokens_budget_counts_reported_usage(http: httpx.Client) -> None:
    eid = open_episode(http, task="guess", seed=1, budgets={"max_tokens": 10})["episode_id"]
    usage = {"prompt_tokens": 50, "completion_tokens": 12, "requests": 1}
    step = http.post(
        f"/episodes/{eid}/step", json={"turn": call("probe", guess=1), "usage": usage}
    ).json()
    assert step["done"] and step["end_reason"] == "max_tokens"


def test_a_task_bug_is_a_500_that_says_so_and_the_server_stays_up(
    http: httpx.Client,
    gate_task: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any) -> str:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(GATE.interaction, "on_no_tool_call", broken)
    eid = open_episode(http, task=gate_task, seed=7)["episode_id"]
    detail = error(http.post(f"/episodes/{eid}/step", json={"turn": "hi"}), 500, "internal")
    assert (
        "ZeroDivisionError: division by zero" in detail
        and "bug in the server or the task" in detail
    )
    assert http.get("/health").json()["ok"]  # on the same keep-alive connection
    logged = [r for r in caplog.records if r.name == "agentharness.serve" and r.exc_info]
    assert logged and f"/episodes/{eid}/step failed" in logged[0].getMessage()


# -- images -----------------------------------------------------------------------------
def test_a_vision_prompt_image_round_trips_as_a_data_url(http: httpx.Client) -> None:
    created = open_episode(http, task="tsp_vision", seed=2, difficulty="easy")
    local = make("tsp_vision", difficulty="easy").reset(seed=2)
    assert [Message.model_validate(m) for m in created["messages"]] == local.messages
    parts = [p for m in created["messages"] if isinstance(m["content"], list) for p in m["content"]]
    url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
    assert url.startswith("data:image/png;base64,")
    image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert image.format == "PNG" and image.width > 10


def test_a_tool_image_comes_back_in_the_step(http: httpx.Client) -> None:
    eid = open_episode(http, task="guess", seed=1)["episode_id"]
    step = http.post(f"/episodes/{eid}/step", json={"turn": call("picture")}).json()
    tool_msg, image_msg = step["messages"]
    assert tool_msg["role"] == "tool" and image_msg["role"] == "user"
    assert image_msg["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


# -- expiry, close, not found -----------------------------------------------------------
def test_idle_episodes_expire_and_use_keeps_them_alive(
    http: httpx.Client, clock: FakeClock
) -> None:
    kept = open_episode(http, task="guess", seed=1)["episode_id"]
    dropped = open_episode(http, task="guess", seed=2)["episode_id"]
    clock.advance(60)
    step = http.post(f"/episodes/{kept}/step", json={"turn": call("probe", guess=1)}).json()
    assert step["expires_in_s"] == 100.0
    clock.advance(60)
    assert http.get(f"/episodes/{kept}").json()["expires_in_s"] == 100.0
    detail = error(http.get(f"/episodes/{dropped}"), 404, "episode_not_found")
    assert "expired: it was idle for more than 100 s" in detail and "--ttl" in detail
    health = http.get("/health").json()
    assert health["sessions"] == 1 and health["expired"] == 1


def test_expired_episodes_are_also_swept_in_the_background(
    serve: ServerFactory, clock: FakeClock
) -> None:
    server = serve(max_sessions=4, ttl_s=10.0, clock=clock, reap_interval_s=0.01)
    with httpx.Client(base_url=server.base_url) as http:
        open_episode(http, task="guess", seed=1)
    store = sessions_of(server)
    assert len(store) == 1
    clock.advance(11)
    for _ in range(1000):  # no request touches the store: only the sweeper can drop it
        if len(store) == 0:
            break
        time.sleep(0.01)
    assert len(store) == 0 and store.expired_total == 1


def test_delete_drops_the_episode(http: httpx.Client) -> None:
    eid = open_episode(http, task="guess", seed=1)["episode_id"]
    http.post(f"/episodes/{eid}/step", json={"turn": call("probe", guess=1)})
    r = http.delete(f"/episodes/{eid}")
    assert r.json() == {"episode_id": eid, "done": False, "end_reason": None, "turns": 1}
    assert "was closed (DELETE)" in error(http.get(f"/episodes/{eid}"), 404, "episode_not_found")
    assert "was closed" in error(http.delete(f"/episodes/{eid}"), 404, "episode_not_found")


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", ""), ("POST", "/step"), ("GET", "/reward"), ("DELETE", "")],
)
def test_unknown_episode_is_404_that_mentions_expiry(
    http: httpx.Client, method: str, path: str
) -> None:
    body = {"turn": "hi"} if method == "POST" else None
    r = http.request(method, f"/episodes/nope{path}", json=body)
    detail = error(r, 404, "episode_not_found")
    assert "may have expired after the server's ttl of 100 s" in detail


# -- concurrency ------------------------------------------------------------------------
def test_slow_steps_do_not_block_other_episodes_and_one_episode_steps_once(
    server: BackgroundServer, gate_task: str
) -> None:
    """Episode A's step blocks in its tool until episode B's step opens A's gate: if the server
    ran steps one at a time (or on the event loop) B could not run and A would time out."""

    async def scenario() -> tuple[dict[str, Any], httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as http:
            a = (await http.post("/episodes", json={"task": gate_task, "seed": 101})).json()
            b = (await http.post("/episodes", json={"task": gate_task, "seed": 102})).json()
            a_step = asyncio.create_task(
                http.post(f"/episodes/{a['episode_id']}/step", json={"turn": call("wait_gate")})
            )
            assert await asyncio.to_thread(entered(101).wait, 30), "A never reached its tool"
            again = await http.post(f"/episodes/{a['episode_id']}/step", json={"turn": "hi"})
            health = await http.get("/health")  # the server still answers while A is blocked
            opened = await http.post(
                f"/episodes/{b['episode_id']}/step", json={"turn": call("open_gate", seed=101)}
            )
            assert opened.json()["messages"][0]["content"] == "opened"
            return (await a_step).json(), again, health

    a_result, again, health = asyncio.run(scenario())
    assert a_result["messages"][0]["content"] == "gate opened" and gate(101).is_set()
    detail = error(again, 409, "episode_busy")
    assert "one turn at a time" in detail
    assert health.json()["sessions"] == 2


# -- the command ------------------------------------------------------------------------
def test_serve_command_runs_uvicorn_with_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from agentharness.cli.main import app

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda asgi, **kw: seen.update(app=asgi, **kw))
    result = CliRunner().invoke(
        app, ["serve", "--port", "0", "--max-sessions", "3", "--ttl", "5"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert seen["host"] == "127.0.0.1" and seen["port"] == 0
    assert seen["app"].state.sessions.max_sessions == 3
    assert seen["app"].state.sessions.ttl_s == 5.0


def test_serve_command_names_the_extra_when_fastapi_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentharness.cli.main import app

    monkeypatch.setitem(sys.modules, "fastapi", None)  # makes `import fastapi` fail
    monkeypatch.delitem(sys.modules, "agentharness.serve.app")
    with pytest.raises(ImportError, match=r"pip install 'agentharness\[serve\]'"):
        importlib.import_module("agentharness.serve.app")
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "pip install 'agentharness[serve]'" in result.stderr
