from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from letters_task import LETTERS

from agentharness.core.registry import register

register(LETTERS)


@pytest.fixture(scope="session")
def smol_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled SmolLM2-135M as a plain checkpoint directory (GGUF dequantized once).

    Loading it through ``load_trainable("smollm2")`` is the default model path of the
    trainers; later loads from the directory take a fraction of a second.
    """
    pytest.importorskip("trl", reason="needs the 'train' extra")
    from agentharness.train.model import load_trainable, save_final

    net, tokenizer = load_trainable(None)
    assert getattr(net, "hf_quantizer", None) is None and net.training
    return save_final(net, tokenizer, tmp_path_factory.mktemp("smol") / "base")
