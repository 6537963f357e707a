"""A tiny randomly initialised causal LM and a small BPE tokenizer, built in memory (no download).

The tokenizer is a real byte-level BPE trained on a few task-like strings, so tokens merge
across spaces and newlines the way a real model's do, with SmolLM2's ChatML template and
special tokens. The model is a two-layer Llama with grouped-query attention (4 query heads
over 2 key-value heads), so decoding exercises the same attention paths as SmolLM2's.
"""

from __future__ import annotations

from typing import Any

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] "
    "+ '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

CORPUS = [
    "You are a helpful assistant. Call tools with <tool_call> tags.",
    '<tool_call>\n{"name": "guess", "arguments": {"x": 42}}\n</tool_call>',
    "<tool_response>\nhigher than 17, lower than 80\n</tool_response>",
    "The answer is 3.5 watts; the target temperature is 41.2 degrees.",
    "Find the number between 1 and 100. Submit it with submit(x).",
] * 20
END = 2  # <|im_end|>: the third special token


def tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(CORPUS, trainer)
    assert backend.token_to_id("<|im_end|>") == END
    # Like the bundled SmolLM2 GGUF's tokenizer: its EOS is <|im_start|>, while the model's
    # generation config ends a turn at <|im_end|>.
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|im_start|>",
        eos_token="<|im_start|>",
        pad_token="<|im_start|>",
    )
    tok.chat_template = CHATML
    return tok


def tiny_model(tok: Any, seed: int = 0) -> Any:
    """A two-layer Llama over ``tok`` with random weights (float32, eval mode)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    net = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=8192,
            eos_token_id=END,
            pad_token_id=END,
            bos_token_id=tok.bos_token_id,
        )
    )
    # Random logits close to uniform make greedy ties likely; sharpen them.
    with torch.no_grad():
        net.lm_head.weight.mul_(40.0)
    net.generation_config.eos_token_id = END
    net.generation_config.pad_token_id = END
    return net.eval()
