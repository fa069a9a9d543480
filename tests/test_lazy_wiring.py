"""Lazy terminal DFAs served end to end (docs/lazy_dfa.md): masks with lazy terminals equal the eager ones.

`lazy_everywhere` sets `pda.lexer.terminals.LAZY_MIN_COUNT` to 0, so every terminal the regex path
builds is a `LazyDFA` served by the lexer's shared product (rows made and filled as they are read);
each grammar is then driven in lockstep with the same grammar compiled eagerly (other limits, so the
recognizer memo keeps the two apart) and checked against the reference mask. Counted strings too
long for the eager path (`.{50000}`, a JSON string of maxLength 50,000) are checked against `re`
and `jsonschema`.
"""

from __future__ import annotations

import gc
import json
import random
import re
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import pda
from fuzz.random_grammars import random_grammar
from pda.errors import GrammarError, LimitExceeded
from pda.grammar.ir import TerminalDef
from pda.lexer import terminals as terminals_module
from pda.lexer.terminals import terminal_dfa
from pda.reference import mask_mismatches, random_walk_states
from pda.regex.lazy import LazyDFA, lazy_terminal
from pda.regex.product import DEAD, SharedProduct
from tests.lockstep import assert_same_masks_in_lockstep
from tests.test_masks import GRAMMAR_TEXTS, synthetic_vocab

EAGER = pda.Limits(max_lexer_states=pda.Limits().max_lexer_states - 1)  # another recognizer than the default's


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def lazy_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 0)


@pytest.fixture(scope="module")
def vocab() -> pda.Vocabulary:
    return synthetic_vocab()


def compile_both(grammar: pda.Grammar, vocab: pda.Vocabulary,
                 monkeypatch: pytest.MonkeyPatch) -> tuple[pda.CompiledGrammar, pda.CompiledGrammar]:
    """(lazy, eager) compilations of one grammar: every eligible terminal lazy in the first, none in the second."""
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 0)
    lazy = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 10**9)
    eager = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False, limits=EAGER)
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 0)
    assert not any(isinstance(d, LazyDFA) for d in eager.lexer.dfas)
    return lazy, eager


def lazy_count(compiled: pda.CompiledGrammar) -> int:
    return sum(isinstance(d, LazyDFA) for d in compiled.lexer.dfas)


@pytest.mark.parametrize("name", sorted(GRAMMAR_TEXTS))
def test_every_terminal_lazy_masks_equal_eager_and_reference(name: str, vocab: pda.Vocabulary,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    lazy, eager = compile_both(pda.Grammar.from_lark(GRAMMAR_TEXTS[name]), vocab, monkeypatch)
    assert lazy_count(lazy) >= 2 and lazy.lexer._all is None
    rng = random.Random(5)
    states = 0
    while states < 150:
        for node, q, _ in random_walk_states(lazy, rng, max_steps=30):
            assert mask_mismatches(lazy, node, q) == [], (name, states)
            states += 1
    for _ in range(6):
        assert_same_masks_in_lockstep(lazy, eager, vocab, rng, 30)


SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"anyOf": [{"type": "string", "maxLength": 1500}, {"type": "string", "minLength": 3, "maxLength": 900}]},
        "body": {"type": "string", "minLength": 2, "maxLength": 300},
        "code": {"type": "string", "pattern": "^[A-Z]{2,400}$"},
        "kind": {"enum": ["alpha", "beta", "gamma"]},
        "size": {"type": "integer"},
    },
    "required": ["title", "body"],
}


def test_json_schema_counted_strings_lazy_by_default_equal_eager(vocab: pda.Vocabulary,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The default threshold makes the counted strings lazy (and nothing else); masks equal the eager path's."""
    grammar = pda.Grammar.from_json_schema(SCHEMA)
    default = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    assert 1 <= lazy_count(default) <= 4
    monkeypatch.setattr(terminals_module, "LAZY_MIN_COUNT", 10**9)
    eager = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False, limits=EAGER)
    rng = random.Random(3)
    for _ in range(10):
        assert_same_masks_in_lockstep(default, eager, vocab, rng, 40)
    for _ in range(4):
        for node, q, _ in random_walk_states(default, rng, max_steps=30):
            assert mask_mismatches(default, node, q) == []


@pytest.mark.parametrize("seed", range(8))
def test_random_grammars_every_terminal_lazy_equal_eager(seed: int, vocab: pda.Vocabulary,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    checked = 0
    while checked < 3:
        text = random_grammar(rng)
        try:
            lazy, eager = compile_both(pda.Grammar.from_lark(text), vocab, monkeypatch)
        except GrammarError:
            continue
        for _ in range(3):
            assert_same_masks_in_lockstep(lazy, eager, vocab, rng, 20)
        checked += 1


def _tokens(vocab: pda.Vocabulary) -> dict[bytes, int]:
    return {t: i for i, t in enumerate(vocab.tokens) if t}


def _allowed(mask: np.ndarray) -> set[int]:
    return set(np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")).tolist())


def test_dot_50000_serves_masks_that_re_agrees_with(vocab: pda.Vocabulary) -> None:
    """`.{50000}` (refused eagerly) compiles lazily; along a 50,000-character text every checked mask holds
    exactly the tokens after which the text can still be completed (as `re` reads the pattern)."""
    grammar = pda.Grammar.from_lark("start: X\nX: /.{50000}/\n")
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    assert lazy_count(compiled) == 1
    rng = random.Random(9)
    by_bytes = _tokens(vocab)
    # The text in ASCII: each character a state (with multi-byte ones, up to four: past max_states at 50,000).
    pieces = [t for t in by_bytes if b"\n" not in t and t.isascii()]
    short = [t for t in pieces if len(t) == 1]
    text, chars = b"", 0
    checks = {0, 1, 7, 25_000, 49_990, 49_998, 49_999}
    state = compiled.initial_state()
    while chars < 50_000:
        if chars in checks or rng.random() < 0.0005:
            allowed = _allowed(compiled.text_mask(*state))
            want = {i for t, i in by_bytes.items() if _viable_dot(text[-8:] + t, 50_000 - chars + len(text[-8:].decode()))}
            assert allowed == want, chars
            assert compiled.can_end(*state) == (chars == 50_000)
        piece = rng.choice(pieces if chars < 49_900 else short)
        state = compiled.scanner.feed(*state, piece)
        assert state is not None
        text += piece
        chars += len(piece.decode())
    assert compiled.can_end(*state) and re.fullmatch(".{50000}", text.decode())


def _complete(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _viable_dot(data: bytes, n: int) -> bool:
    """Whether `data` starts some string of n characters other than a newline (UTF-8)."""
    for cut in range(4):  # an incomplete last character: up to 3 bytes
        head, tail = data[: len(data) - cut], data[len(data) - cut :]
        try:
            text = head.decode()
        except UnicodeDecodeError:
            continue
        if tail and not _starts_character(tail):
            continue
        return "\n" not in text and len(text) + (1 if tail else 0) <= n
    return False


def _starts_character(tail: bytes) -> bool:
    """Whether `tail` (1-3 bytes) begins the UTF-8 encoding of some character: padded with the smallest and the
    largest continuation bytes, one of the two decodes (the lead byte's second-byte range is 80-BF but for
    E0 A0-, ED -9F, F0 90-, F4 -8F, each reached by one of the paddings)."""
    need = {0xC: 2, 0xD: 2, 0xE: 3, 0xF: 4}.get(tail[0] >> 4)
    if need is None or len(tail) >= need:
        return False
    return any(_complete(tail + bytes([pad]) * (need - len(tail))) for pad in (0x80, 0xBF))


def test_json_string_of_max_length_50000(vocab: pda.Vocabulary) -> None:
    """A JSON Schema string of maxLength 50,000 (lowered by the front end as counted pieces): masks along a document of 49,990 characters
    allow a run of letters exactly while it fits, and the document validates."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": 5, "maxLength": 50_000}},
              "required": ["s"], "additionalProperties": False}
    compiled = pda.CompiledGrammar(pda.Grammar.from_json_schema(schema), vocab, warmup_seconds=0, disk_cache=False)
    by_bytes = _tokens(vocab)
    runs = {len(t): i for t, i in by_bytes.items() if set(t) == {ord("a")}}
    matcher = pda.Matcher(compiled)
    assert matcher.accept_bytes(b'{"s":"')
    length, rng = 0, random.Random(2)
    while length < 49_990:
        if length in (0, 3, 4, 5, 30_000) or length > 49_980:
            allowed = _allowed(compiled.text_mask(*matcher._history[-1]))
            for k, i in runs.items():
                assert (i in allowed) == (length + k <= 50_000), (length, k)
            assert (by_bytes[b'"'] in allowed) == (length >= 5)
        k = rng.choice([k for k in runs if length + k <= 49_990])
        assert matcher.accept_token(runs[k])
        length += k
    assert matcher.accept_bytes(b'"}') and matcher.can_end()
    jsonschema.validate(json.loads('{"s":"' + "a" * length + '"}'), schema)


def test_threads_fill_one_grammar_at_once(vocab: pda.Vocabulary, lazy_everywhere: None) -> None:
    """Masks computed on four threads at once over one grammar with lazy terminals (rows made and filled
    concurrently) equal those one thread computes on a fresh compilation."""
    grammar = pda.Grammar.from_json_schema(SCHEMA)
    texts = []
    rng = random.Random(11)
    probe = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False,
                                limits=pda.Limits(max_lexer_states=pda.Limits().max_lexer_states - 2))
    for _ in range(8):
        texts.append([token for _, _, token in random_walk_states(probe, rng, max_steps=30) if token is not None])
    want = [_masks_along(probe, vocab, tokens) for tokens in texts]
    shared = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False,
                                 limits=pda.Limits(max_lexer_states=pda.Limits().max_lexer_states - 3))
    assert lazy_count(shared) >= 2
    start = threading.Barrier(4)

    def worker(k: int) -> list[list[bytes]]:
        start.wait()
        order = list(range(len(texts)))
        random.Random(k).shuffle(order)
        got = {i: _masks_along(shared, vocab, texts[i]) for i in order}
        return [got[i] for i in range(len(texts))]

    with ThreadPoolExecutor(4) as pool:
        for got in pool.map(worker, range(4)):
            assert got == want


def _masks_along(compiled: pda.CompiledGrammar, vocab: pda.Vocabulary, tokens: list[int]) -> list[bytes]:
    state, out = compiled.initial_state(), []
    for token in tokens:
        out.append(compiled.text_mask(*state).tobytes())
        state = compiled.scanner.feed(*state, vocab.tokens[token])
    return out


def test_a_tiny_budget_raises_limit_exceeded_in_the_matcher_and_corrupts_nothing(vocab: pda.Vocabulary) -> None:
    """With a tiny `lazy_dfa_states` budget a step that needs a new lazy state raises LimitExceeded (the
    matcher's sticky error); what was made before still serves the same masks."""
    budgets = pda.memory_budgets()["lazy_dfa_states"]
    grammar = pda.Grammar.from_lark('start: "<" X ">"\nX: /[a-z\\u0400-\\u04ff]{1,3000}/\n')
    try:
        pda.set_memory_budget("lazy_dfa_states", 60_000)
        compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
        assert lazy_count(compiled) == 1
        matcher = pda.Matcher(compiled)
        assert matcher.accept_bytes(b"<ab")
        before = compiled.text_mask(*matcher._history[-1]).copy()
        long = pda.Matcher(compiled)
        long.accept_bytes(b"<")
        for _ in range(3000):
            if long.error is not None:
                break
            long.accept_bytes("жa".encode())
        assert isinstance(long.error, LimitExceeded)
        again = pda.Matcher(compiled)
        assert again.accept_bytes(b"<ab")
        assert np.array_equal(compiled.text_mask(*again._history[-1]), before)
    finally:
        pda.set_memory_budget("lazy_dfa_states", budgets["max_bytes"])


def test_dropping_a_grammar_frees_its_shared_product(vocab: pda.Vocabulary) -> None:
    grammar = pda.Grammar.from_lark('start: "<" X ">"\nX: /[a-z]{1,5000}/\n')
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0, disk_cache=False)
    matcher = pda.Matcher(compiled)
    assert matcher.accept_bytes(b"<abc")
    compiled.text_mask(*matcher._history[-1])
    shared = weakref.ref(compiled.lexer._shared)
    del compiled, matcher, grammar
    gc.collect()
    assert shared() is None


PAIRS = [
    ("[a-z]{1,300}", "[a-c0-9]{2,200}x"),
    ('"(?:[^"\\\\\\x00-\\x1f]|\\\\["\\\\/bfnrt]){0,150}"', '"[a-z]{3,140}"'),
    (".{1,200}", "a(?:bc){0,150}"),
    ("[\\u0400-\\u04ff]{2,130}", "[^\\n]{1,129}!"),
]


@pytest.mark.parametrize("patterns", PAIRS)
def test_lazy_rows_pair_with_the_eager_rows_of_one_shared_product(patterns: tuple[str, str]) -> None:
    """The filler's rows against `SharedProduct._fill`'s: from the start of each terminal and of both together,
    every byte read in lockstep over both tables (the lazy one filled as read, by the Grower for mixed states
    and by `fill` for singles) leads to rows with equal live and accept bits, each lazy row paired with one eager
    row."""
    terms = [TerminalDef(f"T{i}", p) for i, p in enumerate(patterns)]
    eager = SharedProduct([terminal_dfa(t, lazy=False) for t in terms], 200_000)
    lazy_dfas = [lazy_terminal(t) for t in terms]
    lazy = SharedProduct(lazy_dfas, 200_000)
    assert lazy.lazy_terms == [0, 1]
    for candidates in ([0], [1], [0, 1]):
        pairs = {lazy.start(candidates): eager.start(candidates)}
        todo = list(pairs.items())
        while todo:
            q, e = todo.pop()
            assert lazy.live_bits[q].tolist() == eager.live_bits[e].tolist()
            assert lazy.accept_bits[q].tolist() == eager.accept_bits[e].tolist()
            for b in range(256):
                c = int(lazy.byte_class[b])
                nq = lazy.fill(q, c) if lazy.is_lazy(q) else int(lazy.trans[q, c])
                ne = int(eager.trans[e, eager.byte_class[b]])
                if (nq == DEAD) != (ne == DEAD):
                    pytest.fail(f"{patterns} {candidates}: byte {b} kills one table only")
                if nq == DEAD:
                    continue
                if nq in pairs:
                    assert pairs[nq] == ne, f"lazy row {nq} pairs with two eager rows"
                else:
                    pairs[nq] = ne
                    todo.append((nq, ne))
        assert len(pairs) > 100


def test_the_warm_up_follows_only_filled_entries(vocab: pda.Vocabulary) -> None:
    """The warm-up's breadth-first pass over a lexeme's states skips a lazy single's UNFILLED entries (no state -1),
    and the masks it precomputes equal the reference."""
    grammar = pda.Grammar.from_lark('start: "<" X ">"\nX: /[a-z\\u00e9]{1,3000}/\n')
    compiled = pda.CompiledGrammar(grammar, vocab, warmup_seconds=0.5, disk_cache=False)
    assert lazy_count(compiled) == 1
    node = compiled.initial_state()[0]
    for node_, q, _ in random_walk_states(compiled, random.Random(1), max_steps=20):
        assert q >= 0 and mask_mismatches(compiled, node_, q) == []
        node = node_
    assert all(q >= 0 for q in compiled._lexeme_states(node.allowed | compiled.lexer.ignore))
