"""train stage."""

# Compute dtypes a training option takes; "auto" resolves per machine (train.model.resolve_dtype).
DTYPES = ("auto", "float32", "bfloat16")

# What RL advantages are computed from: the task's ``Reward.total`` (partial credit included)
# or success (1 solved, 0 not, so partial credit cannot rank failures). Both RL paths take
# it: ``train grpo --reward-signal`` and verl's ``compute_score(reward_signal=...)``.
REWARD_SIGNALS = ("total", "success")


class TrainInputError(ValueError):
    """Bad training input (data, options, instances); the message says how to fix it.

    The CLI prints it as one line without the exception's name; any other ``ValueError``
    from deep in a training library keeps its name so its origin stays visible.
    """


def signal_score(total: float, success: bool, signal: str) -> float:
    """The score RL optimizes for an episode with reward ``total`` under ``signal``."""
    if signal not in REWARD_SIGNALS:
        raise TrainInputError(
            f"reward signal {signal!r}: choose one of {', '.join(REWARD_SIGNALS)}"
        )
    return float(total) if signal == "total" else (1.0 if success else 0.0)
