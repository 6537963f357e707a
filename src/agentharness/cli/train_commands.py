"""`bootcamp train sft|grpo`: train a model on exported data or on the environments.

The trainers live in :mod:`agentharness.train`; these commands only parse flags and turn
bad input into clear errors. The trained checkpoint (``OUT/final``) is what
``bootcamp eval --agent local --model OUT/final`` loads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from agentharness.cli.app import BootcampTyper, above_zero, app, console, fail, task_values
from agentharness.train import DTYPES

T = TypeVar("T")

train_app = BootcampTyper(
    help="Train a model: SFT on exported trajectories, GRPO on the environments (TRL, in process).",
    no_args_is_help=True,
)
app.add_typer(train_app, name="train")

TRAIN_HINT = "training needs the 'train' extra: pip install 'agentharness[train]'"

ModelOpt = Annotated[
    str | None,
    typer.Option(help="'smollm2' (bundled, default), a checkpoint directory or a .gguf file"),
]
OutOpt = Annotated[
    Path, typer.Option("--out", help="output directory (the model goes to OUT/final)")
]
StepsOpt = Annotated[int | None, typer.Option(min=1, help="optimizer steps (default: one pass)")]
LoraOpt = Annotated[bool, typer.Option("--lora", help="train a LoRA adapter (merged on save)")]
ReportOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--report-to",
        help="log to installed HF trackers: tensorboard, trackio, wandb, ... ('all' installed)",
    ),
]
SaveStepsOpt = Annotated[
    int | None,
    typer.Option(
        min=1, help="write a resumable checkpoint to OUT/trainer every N steps (keeps the last 2)"
    ),
]
ResumeOpt = Annotated[
    bool, typer.Option("--resume", help="continue from the last checkpoint in OUT/trainer")
]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="progress bars")]


def _train(action: Callable[[], T]) -> T:
    """Run a trainer; bad input and missing dependencies become clean errors."""
    from agentharness.agents.base import AgentError
    from agentharness.core.registry import UnknownTaskError
    from agentharness.core.task import TaskConfigError
    from agentharness.rollout.ray_backend import RayBackendError  # no ray import until used
    from agentharness.train import TrainInputError

    try:
        return action()
    except (RayBackendError, TrainInputError) as e:
        raise fail(str(e)) from e
    except ModuleNotFoundError as e:
        raise fail(f"{e}; {TRAIN_HINT}") from e
    except (ValueError, TypeError, KeyError, FloatingPointError, AgentError) as e:
        if isinstance(e, UnknownTaskError | TaskConfigError):
            raise fail(str(e)) from e
        raise fail(f"{type(e).__name__}: {e}") from e  # from a library: name where it came from


def _check_trackers(report_to: list[str] | None) -> None:
    """A --report-to tracker that is not installed: one line, before any model is loaded."""
    if not report_to:
        return
    try:
        from agentharness.train.model import check_report_to

        check_report_to(report_to)
    except ModuleNotFoundError as e:
        raise fail(f"{e}; {TRAIN_HINT}") from e
    except ValueError as e:
        raise fail(str(e)) from e


@train_app.command("sft")
def sft_command(
    data: Annotated[Path, typer.Option(help="SFT JSONL from `bootcamp export sft`")],
    out: OutOpt,
    model: ModelOpt = None,
    max_steps: StepsOpt = None,
    epochs: Annotated[
        float, typer.Option(callback=above_zero, help="passes over the data (without --max-steps)")
    ] = 1.0,
    lr: Annotated[float, typer.Option("--lr", callback=above_zero, help="learning rate")] = 5e-5,
    batch_size: Annotated[int, typer.Option(min=1, help="conversations per device step")] = 1,
    grad_accum: Annotated[int, typer.Option(min=1, help="gradient accumulation steps")] = 1,
    max_length: Annotated[
        int, typer.Option(min=1, help="tokens per conversation (longer: truncated)")
    ] = 2048,
    truncation: Annotated[
        str, typer.Option(help="keep_start or keep_end of an over-long conversation")
    ] = "keep_start",
    warmup_steps: Annotated[int, typer.Option(min=0, help="learning-rate warmup steps")] = 0,
    train_dtype: Annotated[
        str,
        typer.Option(
            help="bfloat16: autocast forward and backward (weights stay float32), float32, or "
            "auto: bfloat16 where this machine multiplies it fast (AVX-512 BF16, AMX, a GPU)"
        ),
    ] = "auto",
    lora: LoraOpt = False,
    lora_r: Annotated[int, typer.Option(min=1, help="LoRA rank")] = 16,
    seed: Annotated[int, typer.Option(min=0, help="training seed")] = 0,
    report_to: ReportOpt = None,
    save_steps: SaveStepsOpt = None,
    resume: ResumeOpt = False,
    progress: ProgressOpt = True,
) -> None:
    """Fine-tune on conversations, with the loss on the assistant's turns only."""
    from agentharness.train.sft import train_sft

    if not data.is_file():
        raise fail(f"--data {data} is not a file (write one with `bootcamp export sft`)")
    if train_dtype not in DTYPES:
        raise fail(f"--train-dtype {train_dtype!r}: choose {', '.join(DTYPES)}")
    _check_trackers(report_to)
    final = _train(
        lambda: train_sft(
            data,
            out,
            model,
            max_steps,
            epochs=epochs,
            learning_rate=lr,
            batch_size=batch_size,
            grad_accum=grad_accum,
            max_length=max_length,
            truncation=truncation,
            warmup_steps=warmup_steps,
            train_dtype=train_dtype,
            lora=lora,
            lora_r=lora_r,
            lora_alpha=2 * lora_r,
            seed=seed,
            report_to=tuple(report_to or ()),
            save_steps=save_steps,
            resume=resume,
            progress=progress,
        )
    )
    console.print(f"saved {final}  (evaluate: bootcamp eval --agent local --model {final})")


def _task_budgets(specs: list[str], default_tokens: int) -> dict[str, tuple[int, int]]:
    """``--task-budget TASK=TURNS[:TOKENS]`` values as ``{task: (turns, tokens)}``."""

    def parse(text: str) -> tuple[int, int] | None:
        turns, _, tokens = text.partition(":")
        try:
            parsed = (int(turns), int(tokens) if tokens else default_tokens)
        except ValueError:
            return None
        return parsed if min(parsed) >= 1 else None

    return task_values(
        "--task-budget",
        specs,
        parse,
        "TASK=TURNS or TASK=TURNS:TOKENS with positive whole numbers, e.g. robot_reach-v7=8:160",
    )


@train_app.command("grpo")
def grpo_command(
    out: OutOpt,
    tasks: Annotated[str | None, typer.Option(help="comma-separated task ids to play")] = None,
    model: ModelOpt = None,
    max_steps: StepsOpt = None,
    data: Annotated[
        Path | None,
        typer.Option(help="RL JSONL (`bootcamp export rl --format trl`) or an instances JSONL"),
    ] = None,
    instances: Annotated[
        Path | None, typer.Option(help="train on these instances (JSONL) instead of fresh ones")
    ] = None,
    difficulty: Annotated[str, typer.Option(help="difficulty of fresh instances")] = "easy",
    n_instances: Annotated[int, typer.Option(min=1, help="fresh instances per task")] = 16,
    first_seed: Annotated[
        int, typer.Option(min=0, help="seed of the first fresh instance")
    ] = 100_000,
    num_generations: Annotated[
        int, typer.Option(min=2, help="group size: episodes per problem")
    ] = 4,
    prompts_per_step: Annotated[int, typer.Option(min=1, help="problems per optimizer step")] = 1,
    max_turns: Annotated[int, typer.Option(min=1, help="assistant turns per episode")] = 4,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="tokens per assistant turn")] = 128,
    task_budget: Annotated[
        list[str] | None,
        typer.Option(
            help="TASK=TURNS[:TOKENS]: that task's episodes play this budget in place of "
            "--max-turns/--max-new-tokens (repeat per task; train as it is evaluated)"
        ),
    ] = None,
    max_completion_length: Annotated[
        int, typer.Option(min=1, help="model + environment tokens per episode")
    ] = 2048,
    temperature: Annotated[
        float, typer.Option(callback=above_zero, help="sampling temperature")
    ] = 1.0,
    draft_tokens: Annotated[
        int,
        typer.Option(
            min=0,
            help="rollouts: tokens each episode drafts from its own conversation for the "
            "model to verify in one pass (speculative sampling: the same distribution, fewer "
            "passes); 0: one token a pass. Either way a group's episodes decode as one row "
            "while they agree",
        ),
    ] = 3,
    rollout_dtype: Annotated[
        str,
        typer.Option(
            help="float32, or bfloat16: sample with a bfloat16 copy of the model (log-probs "
            "then differ from the float32 model's by rounding; see bench/RESULTS.md), or "
            "auto: bfloat16 where this machine multiplies it fast"
        ),
    ] = "float32",
    train_dtype: Annotated[
        str,
        typer.Option(
            help="bfloat16: the training pass under bfloat16 autocast (float32 master "
            "weights; faster on CPUs with bf16 instructions, far slower on AVX2-only ones), "
            "float32 (exact; see bench/RESULTS.md), or auto: bfloat16 where it is fast"
        ),
    ] = "auto",
    shared_prompt: Annotated[
        bool,
        typer.Option(
            "--shared-prompt/--per-episode-pass",
            help="training pass: a group's shared prompt computed once, or TRL's pass over "
            "each episode's prompt + completion (same loss, slower)",
        ),
    ] = True,
    keep_activations_gb: Annotated[
        float | None,
        typer.Option(
            "--keep-activations-gb",
            min=0,
            help="shared-prompt pass: GB of activations kept for the backward; episodes "
            "past it are recomputed in the backward (one more forward of them). "
            "Default: half the memory available at each pass; 0 recomputes every episode",
        ),
    ] = None,
    reference_cache_gb: Annotated[
        float,
        typer.Option(
            "--reference-cache-gb",
            min=0,
            help="with --beta > 0: GB of the reference model's prompt keys and values kept, "
            "so a prompt that starts like one it read computes only the rest (0: none)",
        ),
    ] = 2.0,
    skip_flat_groups: Annotated[
        bool,
        typer.Option(
            "--skip-flat-groups/--train-flat-groups",
            help="skip the training pass of a group whose rewards are all equal (its "
            "gradient is exactly zero without a KL term; the optimizer steps the same)",
        ),
    ] = True,
    reward_signal: Annotated[
        str,
        typer.Option(
            help="what advantages are computed from: total (the task's reward, partial "
            "credit included) or success (1 solved, 0 not: a group nobody solves is flat)"
        ),
    ] = "total",
    resample_flat: Annotated[
        int,
        typer.Option(
            min=0,
            help="dynamic sampling: when a group's episodes all succeed or all fail, play up "
            "to this many more groups, each on a fresh instance of its task, and train on the "
            "first with mixed outcomes (0: train on the group as played)",
        ),
    ] = 0,
    lr: Annotated[float, typer.Option("--lr", callback=above_zero, help="learning rate")] = 5e-6,
    beta: Annotated[float, typer.Option(min=0, help="KL coefficient to the initial model")] = 0.0,
    epsilon: Annotated[
        float, typer.Option(callback=above_zero, help="clip range of the policy ratio")
    ] = 0.2,
    num_iterations: Annotated[int, typer.Option(min=1, help="optimizer passes per batch")] = 1,
    lora: LoraOpt = False,
    lora_r: Annotated[int, typer.Option(min=1, help="LoRA rank")] = 16,
    seed: Annotated[int, typer.Option(min=0, help="training and sampling seed")] = 0,
    report_to: ReportOpt = None,
    save_steps: SaveStepsOpt = None,
    resume: ResumeOpt = False,
    progress: ProgressOpt = True,
    env_backend: Annotated[
        str, typer.Option(help="where episodes and their tools run: local or ray (Ray workers)")
    ] = "local",
    address: Annotated[
        str | None, typer.Option(help="ray: join this cluster; default starts a local Ray")
    ] = None,
    workers: Annotated[int, typer.Option(help="ray: environment worker processes", min=1)] = 2,
) -> None:
    """Play episodes with the model, score them with the tasks' rewards, update with GRPO."""
    from agentharness.cli.main import ray_options
    from agentharness.train import REWARD_SIGNALS
    from agentharness.train.grpo import train_grpo

    ray_envs = ray_options(env_backend, address, workers)
    if rollout_dtype not in DTYPES:
        raise fail(f"--rollout-dtype {rollout_dtype!r}: choose {', '.join(DTYPES)}")
    if train_dtype not in DTYPES:
        raise fail(f"--train-dtype {train_dtype!r}: choose {', '.join(DTYPES)}")
    if reward_signal not in REWARD_SIGNALS:
        raise fail(f"--reward-signal {reward_signal!r}: choose {', '.join(REWARD_SIGNALS)}")

    task_list = [t.strip() for t in (tasks or "").split(",") if t.strip()]
    if not task_list and data is None and instances is None:
        raise fail("give --tasks, --data or --instances")
    loaded = None
    if instances is not None:
        from agentharness.store.instances import read_instances

        loaded = read_instances(instances)
    if data is not None and not data.is_file():
        raise fail(
            f"--data {data} is not a file (write one with `bootcamp export rl --format trl`)"
        )
    if task_list:
        from agentharness.core.registry import UnknownTaskError, get_task

        try:
            for t in task_list:
                get_task(t)
        except UnknownTaskError as e:
            raise fail(str(e)) from e
    task_budgets = _task_budgets(task_budget or [], max_new_tokens)
    _check_trackers(report_to)
    final = _train(
        lambda: train_grpo(
            task_list,
            out,
            model,
            max_steps,
            instances=loaded,
            data=data,
            difficulty=difficulty,
            n_instances=n_instances,
            first_seed=first_seed,
            num_generations=num_generations,
            prompts_per_step=prompts_per_step,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            task_budgets=task_budgets,
            max_completion_length=max_completion_length,
            temperature=temperature,
            draft_tokens=draft_tokens,
            rollout_dtype=rollout_dtype,
            train_dtype=train_dtype,
            shared_prompt=shared_prompt,
            keep_activations_gb=keep_activations_gb,
            reference_cache_gb=reference_cache_gb,
            skip_flat_groups=skip_flat_groups,
            reward_signal=reward_signal,
            resample_flat=resample_flat,
            learning_rate=lr,
            beta=beta,
            epsilon=epsilon,
            num_iterations=num_iterations,
            lora=lora,
            lora_r=lora_r,
            lora_alpha=2 * lora_r,
            seed=seed,
            report_to=tuple(report_to or ()),
            save_steps=save_steps,
            resume=resume,
            progress=progress,
            ray_envs=ray_envs,
        )
    )
    console.print(f"saved {final}  (training episodes: bootcamp report {out / 'rollouts'})")
