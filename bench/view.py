"""The viewer on a large run: indexing and page times for 10,000 episodes.

Builds a run of ``--episodes`` episodes (expert rollouts on escape_room, each line
repeated under new sample numbers so the file is as large as a real run of that size),
then times, through :class:`agentharness.view.ViewerApp` (no sockets):

* index   — the first full scan of ``episodes.jsonl`` (summaries and byte offsets),
* refresh — a request when nothing was appended (one ``stat``),
* list    — the first page of the episode table, unfiltered, filtered, and sorted,
* episode — the page of the last episode in the file (one line read back),
* compare — the list of instances two runs share.

    python bench/view.py [--episodes 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from agentharness import get_task
from agentharness.agents import make_agent
from agentharness.rollout.runner import plan, run
from agentharness.store import RunDir
from agentharness.view import ViewerApp


def build(path: Path, episodes: int, seeds: int) -> None:
    run_dir = RunDir(path)
    run_dir.create({"command": "bench"})
    items = plan([get_task("escape_room")], n=seeds, k=1, seed=0, difficulty="medium")
    asyncio.run(run(items, make_agent("noisy:0.3"), run_dir, concurrency=2))
    lines = run_dir.episodes_path.read_text().splitlines()
    with open(run_dir.episodes_path, "w") as f:
        for i in range(episodes):
            data = json.loads(lines[i % len(lines)])
            data["sample"] = i // len(lines)
            data["episode_id"] = f"{data['episode_id'].split('#')[0]}#{data['sample']}@bench"
            f.write(json.dumps(data, separators=(",", ":")) + "\n")


def timed(fn: object, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root / "a", args.episodes, args.seeds)
        (root / "b").mkdir()
        (root / "b" / "episodes.jsonl").write_bytes((root / "a" / "episodes.jsonl").read_bytes())
        size = (root / "a" / "episodes.jsonl").stat().st_size
        t0 = time.perf_counter()
        app = ViewerApp.from_paths([root / "a", root / "b"])
        index_s = (time.perf_counter() - t0) / 2
        last = app.runs["a"].rows()[-1]
        task = last.task
        print(f"run: {args.episodes} episodes, {size / 1e6:.0f} MB of episodes.jsonl (x2 runs)")
        print(f"index (first scan, per run, in the background in `bootcamp view`): {index_s:.2f} s")
        for label, target in [
            ("refresh, nothing new (stat only)", None),
            ("list page 1 (both runs)", "/"),
            ("list filtered (run, task, success=no)", f"/?run=a&task={task}&success=no"),
            ("list sorted by reward, page 40", "/?sort=reward&desc=1&page=40"),
            (
                "episode page (last line of the file)",
                f"/episode?run=a&id={last.episode_id.replace('#', '%23').replace('@', '%40')}",
            ),
            ("compare list (shared instances)", "/compare?a=a&b=b"),
        ]:
            if target is None:
                ms = timed(lambda: app.runs["a"].refresh(), repeat=50)
            else:
                assert app.handle(target).status == 200, target
                ms = timed(lambda t=target: app.handle(t))
            print(f"{label:42s} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
