"""The bounded, expiring session store on its own (no HTTP), on a fake clock."""

from __future__ import annotations

import threading

import pytest
from serve_helpers import FakeClock

from agentharness import make
from agentharness.core.episode import Episode
from agentharness.serve.sessions import CapacityError, SessionNotFound, SessionStore


def episode(seed: int = 1) -> Episode:
    return make("guess", difficulty="easy").reset(seed=seed)


def open_one(store: SessionStore, seed: int = 1) -> str:
    with store.reserve() as fill:
        return fill(episode(seed)).id


def test_capacity_is_bounded_and_refusal_says_how_to_fix(clock: FakeClock) -> None:
    store = SessionStore(max_sessions=2, ttl_s=100, clock=clock)
    first = open_one(store)
    clock.advance(30)
    open_one(store)
    with pytest.raises(CapacityError) as refused:
        open_one(store)
    # The oldest idle episode expires in 70 s: that is when a slot frees up at the latest.
    assert refused.value.retry_after_s == 70
    assert "--max-sessions" in str(refused.value) and "DELETE" in str(refused.value)
    store.close(first)
    open_one(store)
    assert len(store) == 2


def test_a_failed_build_gives_its_reserved_slot_back(clock: FakeClock) -> None:
    store = SessionStore(max_sessions=1, ttl_s=100, clock=clock)
    with pytest.raises(ValueError, match="generator broke"), store.reserve():
        raise ValueError("generator broke")
    open_one(store)  # the slot is free again
    assert len(store) == 1


def test_reserved_slots_count_against_capacity(clock: FakeClock) -> None:
    # A slow build holds its slot, so a concurrent request is refused before building anything.
    store = SessionStore(max_sessions=1, ttl_s=100, clock=clock)
    with store.reserve() as fill:
        with pytest.raises(CapacityError):
            open_one(store)
        fill(episode())


def test_idle_episodes_expire_and_use_restarts_the_clock(clock: FakeClock) -> None:
    store = SessionStore(max_sessions=4, ttl_s=100, clock=clock)
    kept, dropped = open_one(store, 1), open_one(store, 2)
    clock.advance(60)
    store.get(kept)
    clock.advance(60)  # kept was used 60 s ago, dropped 120 s ago
    assert store.get(kept).id == kept
    with pytest.raises(SessionNotFound) as gone:
        store.get(dropped)
    assert gone.value.gone == "expired"
    assert "expired" in str(gone.value) and "--ttl" in str(gone.value)
    assert store.expired_total == 1 and len(store) == 1


def test_reap_drops_expired_but_never_a_busy_episode(clock: FakeClock) -> None:
    store = SessionStore(max_sessions=4, ttl_s=10, clock=clock)
    busy = store.get(open_one(store, 1))
    idle = open_one(store, 2)
    assert busy.try_begin_step()
    assert not busy.try_begin_step()  # one step at a time
    clock.advance(11)
    assert [s.id for s in store.reap()] == [idle]
    store.touch(busy)  # the server touches a session as its step ends: the step was activity
    busy.end_step()
    assert store.reap() == [] and len(store) == 1
    assert store.expires_in(busy) == 10
    clock.advance(10)
    assert [s.id for s in store.reap()] == [busy.id]


def test_not_found_says_whether_closed_expired_or_unknown(clock: FakeClock) -> None:
    store = SessionStore(max_sessions=4, ttl_s=5, clock=clock)
    closed = open_one(store)
    store.close(closed)
    for episode_id, gone, says in [
        (closed, "closed", "was closed"),
        ("nope", "unknown", "may have expired after the server's ttl of 5 s"),
    ]:
        with pytest.raises(SessionNotFound) as e:
            store.get(episode_id)
        assert e.value.gone == gone and says in str(e.value)
        assert "POST /episodes" in str(e.value)
    with pytest.raises(SessionNotFound):
        store.close(closed)


def test_forgotten_ids_are_bounded(clock: FakeClock) -> None:
    store = SessionStore(max_sessions=1, ttl_s=5, clock=clock, remember_gone=2)
    ids = []
    for seed in range(3):
        ids.append(open_one(store, seed))
        store.close(ids[-1])
    with pytest.raises(SessionNotFound) as e:
        store.get(ids[0])
    assert e.value.gone == "unknown"  # the oldest tombstone was forgotten


def test_concurrent_opens_never_exceed_capacity(clock: FakeClock) -> None:
    store = SessionStore(max_sessions=5, ttl_s=100, clock=clock)
    eps = [episode(s) for s in range(20)]
    results: list[str] = []
    barrier = threading.Barrier(20)

    def worker(i: int) -> None:
        barrier.wait()
        try:
            with store.reserve() as fill:
                fill(eps[i])
            results.append("opened")
        except CapacityError:
            results.append("refused")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("opened") == 5 and results.count("refused") == 15
    assert len(store) == 5


@pytest.mark.parametrize(("max_sessions", "ttl_s"), [(0, 10.0), (1, 0.0)])
def test_nonsense_limits_are_refused(max_sessions: int, ttl_s: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        SessionStore(max_sessions=max_sessions, ttl_s=ttl_s)
