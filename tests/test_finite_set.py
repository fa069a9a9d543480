"""The finite-set engine (issue 9): literal alternations built as trie DFAs.

One behavioural suite, two backends: every check compares the finite-set path
(`pda.trie`, reached through `pda.regex.product.terminal_dfa`) with the general
regex → NFA → DFA path, or with `re` and the slow reference path.
"""

from __future__ import annotations

import random
import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import pda
from pda.grammar.ir import TerminalDef
from pda.reference import mask_mismatches
from pda.regex import product
from pda.regex.dfa import compile_regex
from pda.trie import build_literal_dfa, finite_set_dfa, literal_alternatives

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
    """Compile under one backend: the finite-set hook on or off, with caches of its own."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PDA_CACHE_DIR", str(cache_dir / ("finite" if finite_set else "general")))
        mp.setattr(product, "_memory", {})
        if not finite_set:
            mp.setattr(product, "finite_set_dfa", lambda t, **kw: None)
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
    states = compare_walks(fast, general, values, walks, seed=k)
    assert states >= walks * 5


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
    """At K=10,000 the regex path takes ~25 s, so the oracle is the reference path."""
    assert reference_walks(10_000, 60, tmp_path) >= 300


@pytest.mark.slow
def test_masks_equal_reference_k10000_long(tmp_path: Path) -> None:
    assert reference_walks(10_000, 500, tmp_path) >= 2500


@pytest.mark.slow
def test_masks_equal_general_engine_k10000(tmp_path: Path) -> None:
    values = identifier_values(10_000, seed=10_000)
    vocab = synthetic_vocabulary(values)
    fast, general = compile_both(json_like_grammar(values), vocab, tmp_path)
    assert compare_walks(fast, general, values, 500, seed=10_000) >= 2500
