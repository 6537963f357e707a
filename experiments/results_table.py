"""Print the markdown results table of experiments/smollm2_sft_grpo.sh from its report files.

python experiments/results_table.py [WORKDIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STAGES = (("baseline", "1. untuned"), ("sft", "2. + SFT"), ("grpo", "3. + SFT + GRPO"))


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "experiments/out")
    print(
        "| stage | task | episodes | mean reward | success | mean turns | format errors | end reasons |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for stage, label in STAGES:
        path = work / f"report_{stage}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text())
        for task, s in report.items():
            reasons = ", ".join(f"{k} {v}" for k, v in s["end_reasons"].items())
            print(
                f"| {label} | {task} | {s['episodes']} | {s['mean_reward']:.3f} | "
                f"{s['success_rate']:.2f} | {s['mean_turns']:.1f} | {s['format_errors']} | {reasons} |"
            )


if __name__ == "__main__":
    main()
