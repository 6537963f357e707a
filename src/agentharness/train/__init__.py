"""train stage."""

# Compute dtypes a training option takes; "auto" resolves per machine (train.model.resolve_dtype).
DTYPES = ("auto", "float32", "bfloat16")


class TrainInputError(ValueError):
    """Bad training input (data, options, instances); the message says how to fix it.

    The CLI prints it as one line without the exception's name; any other ``ValueError``
    from deep in a training library keeps its name so its origin stays visible.
    """
