from __future__ import annotations

from pathlib import Path

import pytest
from loop_helpers import make_run, records_of

from agentharness.core.episode import ToolCallRecord
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.reward import Reward
from agentharness.loop.filter import FilterCriteria, estimated_tokens, filter_records
from agentharness.store import EpisodeRecord, RunDir


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> EpisodeRecord:
    """A clean expert episode: success, no errors, a few turns."""
    (record,) = records_of(make_run(tmp_path_factory.mktemp("base"), "expert", n=1))
    assert record.reward.success and record.tool_errors == 0 and record.format_errors == 0
    return record


def variant(base: EpisodeRecord, name: str, **update: object) -> EpisodeRecord:
    return base.model_copy(update={"episode_id": f"{base.episode_id}/{name}", **update})


def constructed(base: EpisodeRecord) -> dict[str, EpisodeRecord]:
    """Records with one known defect each, named after the reason they must be dropped for."""
    bad_call = base.tool_calls[0].model_copy(update={"is_error": True, "result": "error: bad"})
    other_actions = [
        ToolCallRecord(
            turn=1, id="x1", name="probe", arguments={"guess": 1}, result="higher", is_error=False
        ),
        *base.tool_calls,
    ]
    lonely = assistant(tool_calls=[ToolCall.make("never_answered", "probe", {"guess": 3})])
    return {
        "keep": variant(base, "a_keep"),
        "keep_other_actions": variant(base, "b_other", tool_calls=other_actions),
        "duplicate": variant(base, "c_dup"),  # same actions, same instance as a_keep
        "malformed_agent_error": variant(base, "d_err", end_reason="agent_error", error="boom"),
        "malformed_unanswered": variant(base, "e_lonely", messages=[*base.messages, lonely]),
        "malformed_empty": variant(base, "f_empty", messages=base.messages[:2]),
        "format_errors": variant(base, "g_fmt", format_errors=2),
        "tool_errors": variant(base, "h_tool", tool_calls=[bad_call, *base.tool_calls[1:]]),
        "not_successful": variant(
            base, "i_fail", reward=Reward(total=0.95, success=False), tool_calls=other_actions[:1]
        ),
        "reward_below_min": variant(
            base, "j_low", reward=Reward(total=0.3, success=True), tool_calls=other_actions[:2]
        ),
        "too_many_turns": variant(base, "k_turns", turns=40, tool_calls=other_actions[:3]),
        "too_many_tokens": variant(
            base,
            "l_long",
            messages=[*base.messages, Message(role="assistant", content="x" * 40_000)],
            tool_calls=other_actions[:4],
        ),
    }


def test_filter_drops_exactly_what_it_should(base: EpisodeRecord) -> None:
    recs = constructed(base)
    criteria = FilterCriteria(success_only=True, min_reward=0.5, max_turns=30, max_tokens=5000)
    result = filter_records(reversed(list(recs.values())), criteria)
    ids = {name: r.episode_id for name, r in recs.items()}
    assert [r.episode_id for r in result.kept] == [ids["keep"], ids["keep_other_actions"]]
    assert result.dropped == {
        "duplicate": [ids["duplicate"]],
        "malformed": [
            ids["malformed_agent_error"],
            ids["malformed_unanswered"],
            ids["malformed_empty"],
        ],
        "format_errors": [ids["format_errors"]],
        "tool_errors": [ids["tool_errors"]],
        "not_successful": [ids["not_successful"]],
        "reward_below_min": [ids["reward_below_min"]],
        "too_many_turns": [ids["too_many_turns"]],
        "too_many_tokens": [ids["too_many_tokens"]],
    }
    assert result.total == len(recs)
    assert "agent_error" in result.details["malformed"]
    assert estimated_tokens(recs["too_many_tokens"]) > 10_000 > estimated_tokens(recs["keep"])


def test_allow_flags_and_defaults_keep_more(base: EpisodeRecord) -> None:
    recs = constructed(base)
    lenient = FilterCriteria(allow_tool_errors=True, allow_format_errors=True, dedupe=False)
    result = filter_records(recs.values(), lenient)
    assert set(result.dropped) == {"malformed"}
    assert len(result.kept) == len(recs) - 3
    # format errors are counted as such before an unanswered call makes a turn malformed
    strict = filter_records([recs["format_errors"]], FilterCriteria())
    assert strict.counts() == {"format_errors": 1}


def test_filtered_run_is_a_run_every_command_accepts(tmp_path: Path) -> None:
    source = make_run(tmp_path / "src", "noisy:0.4", "tsp_vision", n=4, difficulty="easy")
    records = list(RunDir(source).episodes(resolve_images=True))
    result = filter_records(records, FilterCriteria(allow_tool_errors=True))
    out = RunDir(tmp_path / "filtered")
    out.write_all(result.kept, {"command": "filter"})
    again = list(out.episodes(resolve_images=True))
    assert [r.episode_id for r in again] == [r.episode_id for r in result.kept]
    images = [p for r in again for m in r.messages for p in m.images]
    assert images and all(p.png_bytes() for p in images)  # images travelled with the episodes
