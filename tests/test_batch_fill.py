"""Batch fills: `pda.fill_bitmasks` (with and without `threads`) and `pda.rows.write_rows` write exactly the rows that
one `fill_bitmask` / `copy_row` call per row writes.

The threaded split is forced (`ROW_THREAD_MIN_BYTES` set to one byte) so that small
vocabularies exercise it; random grammars and vocabularies come from the mask fuzzer;
errors are checked to leave the bitmask untouched where the writer says it checks first.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

import pda
from fuzz import mask_fuzz
from pda import matcher as matcher_module
from pda import rows
from pda.compiler import CompiledGrammar
from pda.errors import GrammarError
from pda.kernels.compose import ExtendedMask
from tests.conftest import GRAMMARS

WRITERS = [pytest.param(SimpleNamespace(write_rows=rows.numpy_write_rows, copy_row=rows.numpy_copy_row,
                                        error=rows.NumpyBitmaskLayoutError), id="numpy")]
try:
    from pda import _rows

    WRITERS.append(pytest.param(SimpleNamespace(write_rows=_rows.write_rows, copy_row=_rows.copy_row,
                                                error=_rows.BitmaskLayoutError), id="native"))
except ImportError:
    WRITERS.append(pytest.param(None, id="native", marks=pytest.mark.skip(
        reason="pda._rows is not built here (no C compiler at install): the numpy writers serve")))


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random grammars and vocabularies: keep their cache files out of the user's cache."""
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def split_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fill_bitmasks` starts every thread it is allowed, however few bytes its rows hold."""
    monkeypatch.setattr(matcher_module, "ROW_THREAD_MIN_BYTES", 1)


def random_source(rng: np.random.Generator, width: int) -> object:
    """A row source of any kind: a mask shorter or longer than the row, an extended mask, a plain scatter."""
    kind = rng.integers(4)
    n = int(rng.integers(0, 2 * width + 2))
    words = rng.integers(-2**31, 2**31, size=n, dtype=np.int64).astype(np.int32)
    if kind == 0:
        return words
    if kind in (1, 2):
        ids = np.unique(rng.integers(0, 64 * width + 64, size=int(rng.integers(0, 12)))).astype(np.int32)
        return ExtendedMask(words if kind == 1 else None, ids)
    packed = rng.integers(0, 2 * width, size=n, dtype=np.int64)  # word numbers, some past the row
    lo = int(rng.integers(0, n + 1))
    return packed, words, lo, int(rng.integers(lo, n + 1))


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_write_rows_equals_one_copy_row_a_row(writer: SimpleNamespace, threads: int) -> None:
    rng = np.random.default_rng(threads)
    for _ in range(30):
        width, n_rows = int(rng.integers(1, 40)), int(rng.integers(1, 30))
        chosen = rng.permutation(n_rows)[: int(rng.integers(0, n_rows + 1))].tolist()
        sources = [None if rng.random() < 0.2 else random_source(rng, width) for _ in chosen]
        batch = rng.integers(-2**31, 2**31, size=(n_rows, width), dtype=np.int64).astype(np.int32)
        single = batch.copy()
        writer.write_rows(batch, chosen, sources, threads)
        for row, source in zip(chosen, sources):
            if source is not None:
                rows.numpy_copy_row(single, row, source)
        assert np.array_equal(batch, single)


@pytest.mark.parametrize("writer", WRITERS)
def test_write_rows_checks_everything_before_writing(writer: SimpleNamespace) -> None:
    mask = np.arange(5, dtype=np.int32)
    bitmask = np.full((3, 5), 7, dtype=np.int32)
    bad = [
        ((np.zeros((3, 10), dtype=np.int32)[:, ::2], [0], [mask], 1), writer.error, "C-contiguous"),
        ((np.zeros((3, 5), dtype=np.uint32), [0], [mask], 1), writer.error, None),
        ((np.zeros(5, dtype=np.int32), [0], [mask], 1), writer.error, None),
        ((bitmask, [0, 3], [mask, mask], 1), IndexError, "row 3 is outside a bitmask of 3 rows"),
        ((bitmask, [1, 0, 1], [mask, mask, None], 2), ValueError, "row 1 appears twice in one batch"),
        ((bitmask, [0, 1], [mask, (mask.astype(np.int64), mask, 2, 9)], 1), IndexError, "outside the 5 packed words"),
        ((bitmask, [0], [mask], 0), ValueError, "threads must be 1 to"),
        ((bitmask, [0], [mask], rows.MAX_ROW_THREADS + 1), ValueError, "threads must be 1 to"),
    ]
    read_only = bitmask.copy()
    read_only.flags.writeable = False
    bad.append(((read_only, [0], [mask], 1), writer.error, None))
    for args, error, message in bad:
        with pytest.raises(error, match=message):
            writer.write_rows(*args)
        assert (bitmask == 7).all()


def fuzz_grammars(n: int, seed: int) -> list[pda.CompiledGrammar]:
    """`n` random (grammar, vocabulary) pairs the mask fuzzer makes, compiled."""
    out = []
    index = 0
    while len(out) < n:
        index += 1
        try:
            case = mask_fuzz.random_case(seed, index)
            out.append(mask_fuzz.compile_case(case.grammar, case.tokens, case.eos_ids, case.special_ids,
                                              case.mask_width))
        except GrammarError:
            continue
    return out


def advanced(compiled: pda.CompiledGrammar, rng: random.Random, steps: int) -> pda.Matcher:
    """A matcher after up to `steps` random allowed tokens (EOS among them), in the error state now and then."""
    m = pda.Matcher(compiled)
    for _ in range(steps):
        allowed = m.allowed_token_ids().tolist()
        if not allowed:
            break
        m.accept_token(rng.choice(allowed))
    if rng.random() < 0.1:
        m.error = pda.LimitExceeded("a limit hit earlier")
    return m


def fill_each(matchers: list[pda.Matcher], bitmask: np.ndarray, order: list[int]) -> None:
    for m, row in zip(matchers, order):
        m.fill_bitmask(bitmask, row)


@pytest.mark.usefixtures("split_always")
@pytest.mark.parametrize("seed", range(6))
def test_fill_bitmasks_threads_equal_single_fills_on_random_grammars(seed: int) -> None:
    rng = random.Random(seed)
    grammars = fuzz_grammars(4, seed)
    for step in range(12):
        for compiled in grammars:
            matchers = [advanced(compiled, rng, rng.randint(0, step)) for _ in range(rng.randint(1, 20))]
            n_rows = len(matchers) + rng.randint(0, 3)
            order = rng.sample(range(n_rows), len(matchers))
            single = np.full((n_rows, compiled.mask_words), -1, dtype=np.int32)
            fill_each(matchers, single, order)
            for threads in (1, 2, 5):
                batch = np.full_like(single, -1)
                pda.fill_bitmasks(matchers, batch, order, threads=threads)
                assert np.array_equal(batch, single), (seed, step, threads)


@pytest.fixture(scope="module")
def json_compiled() -> pda.CompiledGrammar:
    tokens = [b"[", b"]", b"1", b",", b"12", b" ", None, None, None, b'"a"', b"{", b"}", b":", b"[1", b"],", b"true"]
    vocab = pda.Vocabulary.from_tokens(tokens, eos_ids=[6], special_ids=[7, 8])
    return pda.compile(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab, mask_width=70)


def json_matchers(compiled: pda.CompiledGrammar, n: int, seed: int) -> list[pda.Matcher]:
    """`n` matchers at random points of random JSON texts: some ended (EOS), some in the error state, some with
    their own stop id."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        m = pda.Matcher(compiled, stop_token_ids=[8] if i % 7 == 3 else None)
        for _ in range(rng.randint(0, 12)):
            allowed = m.allowed_token_ids().tolist()
            if not allowed:
                break
            m.accept_token(rng.choice(allowed))
        if i % 11 == 5:
            m.error = pda.LimitExceeded("a limit hit earlier")
        out.append(m)
    return out


@pytest.mark.usefixtures("split_always")
def test_fill_bitmasks_threads_on_every_bitmask_kind(json_compiled: pda.CompiledGrammar) -> None:
    torch = pytest.importorskip("torch")
    matchers = json_matchers(json_compiled, 60, 1)
    assert any(m.is_terminated() for m in matchers) and any(m.error for m in matchers)
    order = random.Random(2).sample(range(64), len(matchers))
    single = np.full((64, json_compiled.mask_words), -1, dtype=np.int32)
    fill_each(matchers, single, order)
    for threads in (1, 2, 4):
        as_numpy = np.full_like(single, -1)
        pda.fill_bitmasks(matchers, as_numpy, order, threads=threads)
        assert np.array_equal(as_numpy, single)
        as_torch = torch.full(single.shape, -1, dtype=torch.int32)
        pda.fill_bitmasks(matchers, as_torch, [torch.tensor(r) for r in order], threads=threads)
        assert np.array_equal(as_torch.numpy(), single)
        unsigned = np.full(single.shape, 2**32 - 1, dtype=np.uint32)  # the general path
        pda.fill_bitmasks(matchers, unsigned, order, threads=threads)
        assert np.array_equal(unsigned.view(np.int32), single)
        strided = np.full((64, 2 * single.shape[1]), -1, dtype=np.int32)[:, ::2]
        pda.fill_bitmasks(matchers, strided, order, threads=threads)
        assert np.array_equal(strided, single)


def test_fill_bitmasks_errors(json_compiled: pda.CompiledGrammar) -> None:
    matchers = json_matchers(json_compiled, 4, 3)
    bitmask = np.zeros((4, json_compiled.mask_words), dtype=np.int32)
    with pytest.raises(ValueError, match="row 2 appears twice in one batch"):
        pda.fill_bitmasks(matchers, bitmask, [0, 2, 2, 3])
    with pytest.raises(ValueError, match="row 0 appears twice in one batch"):
        pda.fill_bitmasks(matchers, bitmask[:, ::1].astype(np.uint32), [0, 1, 0, 3])  # the general path too
    with pytest.raises(pda.matcher.BitmaskRowError, match="row 4 is outside a bitmask of 4 rows"):
        pda.fill_bitmasks(matchers, bitmask, [0, 1, 2, 4])
    with pytest.raises(ValueError, match="4 matchers but 3 rows"):
        pda.fill_bitmasks(matchers, bitmask, [0, 1, 2])
    for threads in (0, rows.MAX_ROW_THREADS + 1):
        with pytest.raises(ValueError, match="threads must be 1 to"):
            pda.fill_bitmasks(matchers, bitmask, threads=threads)
    with pytest.raises(TypeError, match="threads must be an integer"):
        pda.fill_bitmasks(matchers, bitmask, threads=2.0)
    with pytest.raises(TypeError, match="row must be an integer"):
        pda.fill_bitmasks(matchers, bitmask, [0, 1, 2, "3"])
    with pytest.raises(TypeError, match="the bitmask must be int32 or uint32"):
        pda.fill_bitmasks(matchers, np.zeros((4, json_compiled.mask_words), dtype=np.int64))


def test_fill_bitmasks_sets_the_error_state_as_fill_bitmask_does(json_compiled: pda.CompiledGrammar,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    matchers = json_matchers(json_compiled, 6, 4)
    live = [m for m in matchers if m.error is None and not m.is_terminated() and m._stop is None]
    assert live
    masks = json_compiled.masks

    def limit_hit(node: object, q: int) -> None:
        raise pda.LimitExceeded("a miss over its limit")

    monkeypatch.setattr(masks, "row_source", limit_hit)
    monkeypatch.setattr(masks, "step_mask", limit_hit)
    monkeypatch.setattr(masks, "text_mask", limit_hit)
    batch = np.full((6, json_compiled.mask_words), -1, dtype=np.int32)
    pda.fill_bitmasks(matchers, batch)
    assert all(isinstance(m.error, pda.LimitExceeded) for m in live)
    eos_only = np.zeros(json_compiled.mask_words, dtype=np.int32)
    eos_only[0] = 1 << 6
    for row, m in enumerate(matchers):
        if m._stop is None:
            assert np.array_equal(batch[row], eos_only), row


def test_pool_threads_filling_cold_matchers_equal_one_thread() -> None:
    """Two pool threads missing on the same grammar at once (the walk kernel releases the lock mid-miss) write what
    one thread writes: the shared memos and spares stay consistent."""
    rng = random.Random(9)
    texts = []
    for _ in range(16):
        texts.append([rng.randint(0, 15) for _ in range(30)])
    tokens = [b"[", b"]", b"1", b",", b"12", b" ", None, b'"ab', b'c"', b'"a"', b"{", b"}", b":", b"[1", b"],", b"true"]

    def replay(threads: int) -> list[np.ndarray]:
        vocab = pda.Vocabulary.from_tokens(tokens, eos_ids=[6])  # a new compiled grammar: every mask a miss
        compiled = CompiledGrammar(pda.Grammar.load(str(GRAMMARS / "json.lark")), vocab, warmup_seconds=0,
                                   disk_cache=False)
        matchers = [pda.Matcher(compiled) for _ in texts]
        positions = [0] * len(texts)
        out = []
        with ThreadPoolExecutor(threads) as pool:
            for _ in range(30):
                bitmask = np.zeros((len(matchers), compiled.mask_words), dtype=np.int32)
                shares = [list(range(k, len(matchers), threads)) for k in range(threads)]
                list(pool.map(lambda share: [matchers[i].fill_bitmask(bitmask, i) for i in share], shares))
                out.append(bitmask)
                for i, m in enumerate(matchers):  # each takes its text's next allowed token
                    allowed = m.allowed_token_ids().tolist()
                    while positions[i] < len(texts[i]) and texts[i][positions[i]] not in allowed:
                        positions[i] += 1
                    if positions[i] < len(texts[i]) and texts[i][positions[i]] != 6:
                        m.accept_token(texts[i][positions[i]])
                    positions[i] += 1
        return out

    assert all(np.array_equal(a, b) for a, b in zip(replay(1), replay(4)))
