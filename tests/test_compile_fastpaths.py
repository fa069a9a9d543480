"""Parts of a cold compile built faster than they were, against the way they were built."""

from __future__ import annotations

import hashlib
import json
import random
import warnings
from collections import Counter, defaultdict
from itertools import chain

import numpy as np
import pytest

import pda
from pda.errors import PdaError
from pda.grammar.alternatives import _candidates, _embeddable
from pda.grammar.ir import GrammarIR
from tests.conftest import GRAMMARS, corpus_path


def test_eos_mask_is_the_packed_bool_row() -> None:
    """`CompiledGrammar.eos_mask` is written bit by bit; it equals a bool row over the mask width packed
    little-endian (the former construction), for EOS ids anywhere in the vocabulary and any mask width."""
    rng = random.Random(3)
    grammar = pda.Grammar.from_json_schema({"type": "boolean"})
    for _ in range(30):
        size = rng.randint(2, 200)
        tokens = [bytes([97 + i % 26]) * (1 + i // 26) for i in range(size)]
        eos = rng.sample(range(size), rng.randint(1, min(4, size - 1)))
        vocab = pda.Vocabulary.from_tokens(tokens, eos_ids=eos)
        width = rng.choice([None, size, size + rng.randint(1, 100)])
        compiled = pda.compile(grammar, vocab, mask_width=width)
        row = np.zeros(compiled.mask_words * 32, dtype=bool)
        row[eos] = True
        expected = np.packbits(row, bitorder="little").view(np.int32)
        assert compiled.eos_mask.dtype == np.int32
        np.testing.assert_array_equal(compiled.eos_mask, expected)


def _literal_dfa_by_numpy(data: bytes) -> tuple[np.ndarray, ...]:
    """literal_dfa's tables as numpy built them before (`np.full`, fancy assignment, `astype`)."""
    n, used = len(data), sorted(set(data))
    table = bytearray([min(len(used), 255)]) * 256
    for c, b in enumerate(used):
        table[b] = c
    trans = np.full((n + 2, len(used) + 1), n + 1, dtype=np.int32)
    trans[np.arange(n), np.frombuffer(data.translate(table), dtype=np.uint8)] = np.arange(1, n + 1, dtype=np.int32)
    accept = np.zeros((n + 2, 1), dtype=bool)
    accept[n] = True
    live = np.ones((n + 2, 1), dtype=bool)
    live[n + 1] = False
    return np.frombuffer(table, dtype=np.uint8).astype(np.int32), trans, accept, live


def test_eos_rows_are_shared_per_vocabulary_and_width_and_read_only() -> None:
    """Grammars compiled for one vocabulary and width share its EOS ids and row (read-only: a matcher or a mask
    writing into them would change every grammar's); another width has its own."""
    vocab = pda.Vocabulary.from_tokens([b"a", b"b", b"c", b"d"], eos_ids=[1, 3])
    first = pda.compile(pda.Grammar.from_json_schema({"type": "boolean"}), vocab)
    second = pda.compile(pda.Grammar.from_json_schema({"type": "integer"}), vocab)
    wide = pda.compile(pda.Grammar.from_json_schema({"type": "integer"}), vocab, mask_width=70)
    assert first.eos_mask is second.eos_mask and first.eos_ids is second.eos_ids
    assert wide.eos_mask is not first.eos_mask and len(wide.eos_mask) == 3 and wide.eos_ids.tolist() == [1, 3]
    for array in (first.eos_mask, first.eos_ids, wide.eos_mask):
        assert not array.flags.writeable
    with pytest.raises(ValueError):
        first.eos_mask[0] = 0


def test_literal_dfa_tables_are_the_numpy_ones() -> None:
    """`literal_dfa` writes its tables as C int arrays; they equal (values, dtypes) the numpy-built ones, for
    short, long, repetitive and all-256-byte literals, and its digest names the literal's bytes."""
    from pda.regex.dfa import literal_dfa

    rng = random.Random(7)
    cases = [b"a", b"aaaa", b'"name"', bytes(range(256)), bytes(range(255, -1, -1)) * 2, "ключ".encode()]
    cases += [bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))) for _ in range(200)]
    for data in cases:
        dfa = literal_dfa(data, name="K")
        byte_class, trans, accept, live = _literal_dfa_by_numpy(data)
        for got, want in ((dfa.byte_class, byte_class), (dfa.trans, trans), (dfa.accept, accept), (dfa.live, live)):
            assert got.dtype == want.dtype and got.shape == want.shape and not got.flags.writeable
            np.testing.assert_array_equal(got, want)
        assert (dfa.n_states, dfa.start, dfa.dead, dfa.names) == (len(data) + 2, 0, len(data) + 1, ("K",))
        # Its digest names its bytes (the tables are a function of them), never a table hash's value.
        assert dfa.digest == literal_dfa(data, name="other").digest == hashlib.sha256(
            b"literal\0" + data).hexdigest()[:32]
        h = hashlib.sha256()
        for array in (trans, byte_class, accept, live):
            h.update(array.tobytes())
        assert dfa.digest != h.hexdigest()[:32]
    assert len({literal_dfa(data).digest for data in cases}) == len(set(cases))


def test_eos_mask_of_an_impossible_width_is_a_value_error() -> None:
    """A mask width past what an array can hold is refused with ValueError, as the bool row's numpy was."""
    vocab = pda.Vocabulary.from_tokens([b"a", b"b"], eos_ids=[1])
    with pytest.raises(ValueError, match="too large"):
        pda.compile(pda.Grammar.from_json_schema({"type": "null"}), vocab, mask_width=2**70)


def _candidates_counting_first(ir: GrammarIR, keep: frozenset[str]) -> dict[tuple, list[str]]:
    """`pda.grammar.alternatives._candidates` as it was: every symbol's uses counted first."""
    terminals = ir.terminal_by_name
    uses = Counter(chain.from_iterable(r.rhs for r in ir.rules))
    groups: dict[tuple, list[str]] = defaultdict(list)
    for rule in ir.rules:
        if len(rule.rhs) != 1 or rule.alias is not None:
            continue
        name = rule.rhs[0]
        t = terminals.get(name)
        if t is None or uses[name] != 1 or t.lazy or name in ir.ignore or name in keep or not _embeddable(t):
            continue
        groups[(rule.lhs, t.priority, t.flags)].append(name)
    return groups


def _merging(groups: dict[tuple, list[str]]) -> list[tuple[tuple, list[str]]]:
    return [(key, names) for key, names in groups.items() if len(names) > 1]


def _irs() -> list[GrammarIR]:
    irs = [pda.Grammar.load(str(GRAMMARS / name)).ir for name in ("json.lark", "lua.lark", "python.lark", "sqlite.lark")]
    irs.append(pda.Grammar.from_lark('start: x "," y\nx: "a" | "b" | "c"\ny: /[0-9]+/ | /[a-f]+/ | "z" | "zz"\n').ir)
    irs.append(pda.Grammar.from_lark('start: x x\nx: "a" | "b"\n').ir)
    irs.append(pda.Grammar.from_lark('start: x | "a"\nx: "a" | "b" | A\nA: "q"\n').ir)
    for category in ("Glaiveai2K", "Github_easy", "Kubernetes", "Snowplow"):
        path = corpus_path("jsonschemabench", "schemas", f"{category}.jsonl")
        with path.open() as f:
            for line, _ in zip(f, range(60)):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        irs.append(pda.Grammar.from_json_schema(json.loads(line)["schema"], whitespace="flexible").ir)
                except PdaError:
                    pass
    return irs


def test_alternative_groups_equal_counting_every_symbol_first() -> None:
    """Merging alternative terminals counts uses only when some group could merge: the groups that merge,
    and their order, are those of counting first, on corpus schemas and grammars (some of which merge)."""
    merging = 0
    for ir in _irs():
        for keep in (frozenset(), frozenset(t.name for t in ir.terminals[:2])):
            groups = _merging(_candidates(ir, keep))
            assert groups == _merging(_candidates_counting_first(ir, keep))
            merging += bool(groups)
    assert merging >= 10


def test_literal_tables_kernel_refuses_what_is_not_a_literal() -> None:
    """`pda.kernels.trie.literal_tables` takes non-empty bytes only (a clear error, never a crash)."""
    from pda.kernels import _trie
    from pda.kernels.trie import literal_tables

    for bad in (b"", "abc", None, bytearray(b"ab")):
        with pytest.raises(TypeError):
            _trie.literal(bad)
    byte_class, trans = literal_tables(b"abca")
    assert byte_class.dtype == np.int32 and trans.dtype == np.int32 and not trans.flags.writeable
    assert trans.shape == (6, 4) and byte_class[ord("c")] == 2 and byte_class[ord("z")] == 3


def test_literal_terminals_share_one_dfa_by_their_text() -> None:
    """A literal's DFA is memoised by its text: terminals spelling it differently (an escape, a neutral flag)
    get the same DFA object, and it accepts exactly the literal."""
    from pda.grammar.ir import TerminalDef
    from pda.lexer.terminals import terminal_dfa

    a = terminal_dfa(TerminalDef("A", pattern='"a\\-b"'))
    b = terminal_dfa(TerminalDef("B", pattern='"a-b"', flags="s"))
    assert a is b and a.accepts(b'"a-b"') and not a.accepts(b'"a-b') and not a.accepts(b'"a\\-b"')


def test_a_terminal_dfa_on_disk_with_other_than_one_accepting_column_is_a_miss(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lexer reads a terminal DFA's accepting column 0: an entry (hash-valid) holding two columns is refused
    by the terminal cache and the DFA rebuilt, never handed on."""
    from pda import cache
    from pda.grammar.ir import TerminalDef
    from pda.lexer import terminals
    from pda.lru import ByteLRU
    from pda.regex.dfa import compile_regex

    monkeypatch.setenv("PDA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PDA_CACHE", "1")
    monkeypatch.setattr(terminals, "_memory", ByteLRU(terminals.TERMINAL_DFAS_MAX_BYTES))
    pattern = "[a-c]+x"
    wrong = compile_regex("[a-c]+x|y")
    meta, arrays = wrong.to_arrays()
    arrays["accept"] = np.repeat(arrays["accept"], 2, axis=1)
    arrays["live"] = np.repeat(arrays["live"], 2, axis=1)
    key = {"pattern_sha256": hashlib.sha256(pattern.encode()).hexdigest(), "flags": "", "lazy": False}
    cache.store("dfa", key, meta, arrays)
    cache.flush()
    assert cache.load("dfa", key, lambda m, a: a)["accept"].shape[1] == 2  # the entry is there and readable
    dfa = terminals.terminal_dfa(TerminalDef("T", pattern=pattern))
    assert dfa.accept.shape[1] == 1 and dfa.accepts(b"abx") and not dfa.accepts(b"y")


def test_limits_equal_to_the_defaults_use_the_grammars_own_recognizer() -> None:
    """`pda.Limits()` made per request equals the defaults: the compile uses `Grammar.recognizer` (no copy of the
    limits compared); limits that change a parser or lexer budget get a recognizer of their own, and limits
    that change only what the recognizer does not read share the grammar's."""
    vocab = pda.Vocabulary.from_tokens(["{", "}", '"a"', ":", "1", None], eos_ids=[5])
    grammar = pda.Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert pda.compile(grammar, vocab, limits=pda.Limits()).recognizer is grammar.recognizer
    assert pda.compile(grammar, vocab, limits=pda.Limits(warmup_nodes=3)).recognizer is grammar.recognizer
    own = pda.compile(grammar, vocab, limits=pda.Limits(max_lexer_states=5_000)).recognizer
    assert own is not grammar.recognizer and own.limits.max_lexer_states == 5_000
