"""Unit tests of pda.regex: constructs, case folding, UTF-8, refusals, limits, scale."""

from __future__ import annotations

import functools
import os
import random
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pda.errors import LimitExceeded, RegexError
from pda.grammar.ir import TerminalDef
from pda.regex import (
    LexerDFA,
    build_lexer_dfa,
    compile_regex,
    has_lazy_quantifier,
    sample_from_dfa,
)
from pda.regex import charset as cs
from pda.regex import syntax
from pda.regex.dfa import literal_set_dfa
from pda.regex.finite_set import FINITE_SET_MIN_CHOICES
from pda.regex.literals import alternation_pattern

FLAGS = {"i": re.I, "s": re.S, "a": re.A, "x": re.X, "m": re.M}


def re_accepts(pattern: str, flags: str, data: bytes) -> bool:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    fl = 0
    for c in flags:
        fl |= FLAGS[c]
    return re.fullmatch(pattern, text, fl) is not None


def agree(pattern: str, samples: list, flags: str = "") -> LexerDFA:
    dfa = compile_regex(pattern, flags)
    for s in samples:
        data = s.encode("utf-8") if isinstance(s, str) else s
        assert dfa.accepts(data) == re_accepts(pattern, flags, data), (pattern, s)
    return dfa


def assert_minimal(dfa: LexerDFA) -> None:
    """Moore's refinement on the result finds no two equivalent states, but in the empty language's DFA: its
    start stays a state apart from the dead one (`pda.regex.dfa._minimise`), which lexers read as START."""
    if not dfa.accept.any():
        assert dfa.n_states == 2 and dfa.start != dfa.dead and not dfa.live.any()
        return
    block = np.unique(np.packbits(dfa.accept, axis=1), axis=0, return_inverse=True)[1].ravel()
    while True:
        sig = np.concatenate([block[:, None], block[dfa.trans]], axis=1)
        new = np.unique(sig, axis=0, return_inverse=True)[1].ravel()
        if len(np.unique(new)) == len(np.unique(block)):
            break
        block = new
    assert len(np.unique(block)) == dfa.n_states


# ---------------------------------------------------------------- constructs


CASES = [
    ("abc", ["abc", "ab", "abcd", "", "ABC"]),
    ("a|bc|", ["a", "bc", "", "b", "abc"]),
    ("[a-f0-9]+", ["deadbeef", "g", "", "0"]),
    ("[^a-z]", ["a", "A", "é", "\n", "😀"]),
    ("[^\\n]*", ["abc", "a\nb", ""]),
    ("a*b+c?", ["b", "aabbc", "ac", "abcc"]),
    ("a{3}", ["aa", "aaa", "aaaa"]),
    ("a{2,}", ["a", "aa", "aaaaa"]),
    ("a{1,3}b", ["b", "ab", "aaab", "aaaab"]),
    ("(ab){0,2}?", ["", "ab", "abab", "ababab"]),
    ("(?:x|yz)*?q", ["q", "xyzq", "xq q"]),
    (".", ["a", "\n", "é", "€", "😀", "ab"]),
    ("(?s:.)", ["\n", "a"]),
    ("\\d+", ["123", "٣٤", "1a", "²"]),
    ("\\w+", ["abc_1", "éß", "a-b", "٣"]),
    ("\\s", [" ", "\t", "\u00a0", "\u2028", "a"]),
    ("[^\\W\\d]\\w*", ["_x1", "éa", "1a", "ªb"]),
    ("\\D\\S\\W", ["a b", "aa!", "1a!"]),
    ("^abc$", ["abc", "ab"]),
    ("\\Aab\\Z", ["ab", "a"]),
    ("(a)(?:b)(?P<n>c)", ["abc", "ab"]),
    ("[\u00e0-\u00ff\u0100-\u024f]+", ["àÿĀɏ", "a"]),
    ("[\U0001f600-\U0001f64f]", ["😀", "🙏", "🚀"]),
    ("[\u0800-\uffff]", ["\u0800", "\uffff", "\u07ff", "\U00010000"]),
]


@pytest.mark.parametrize("pattern,samples", CASES)
def test_construct_matches_re(pattern: str, samples: list[str]) -> None:
    assert_minimal(agree(pattern, samples))


@pytest.mark.parametrize(
    "pattern,flags",
    [("k", "i"), ("straße", "i"), ("[a-z]+", "i"), ("[^k]", "i"), ("σς", "i"), ("ǅ", "i"),
     ("[ǆ-ǌ]", "i"), ("ı", "i"), ("[\U00010400-\U0001044f]", "i"), ("\\w", "ai"), ("k", "ai"),
     ("(?i:k)K", ""), ("(?a:\\w)", ""), ("a.b", "s"), ("a b # comment", "x")],
)
def test_case_folding_and_flags_every_code_point_of_interest(pattern: str, flags: str) -> None:
    dfa = compile_regex(pattern, flags)
    # every code point whose case mapping is non-trivial, plus a random sample
    lower = cs._lower_table(False)
    interesting = np.flatnonzero(lower != np.arange(cs.N_CP)).tolist()
    interesting += [int(x) for x in lower[interesting]] + list(range(128))
    interesting += [0x212A, 0x17F, 0x1E9E, 0x3C2, 0x130, 0x131]
    prefix = {"straße": "straß", "σς": "σ", "(?i:k)K": "k", "a.b": "a", "a b # comment": "a"}.get(
        pattern, ""
    )
    suffix = {"a.b": "b"}.get(pattern, "")
    for cp in set(interesting):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        text = prefix + chr(cp) + suffix
        data = text.encode("utf-8")
        assert dfa.accepts(data) == re_accepts(pattern, flags, data), (pattern, flags, hex(cp))


def test_class_sets_equal_re_on_all_code_points() -> None:
    """Character classes under re.I/re.A agree with `re` on every scalar value."""
    everything = cs._all_chars()
    for pattern, fl in [("[a-z\\d]", re.I), ("[^A-Zß]", re.I), ("[\\w-]", re.I | re.A),
                        ("[^\\s\\d]", 0), ("[Ω-ώ]", re.I)]:
        kept = re.sub(f"(?!{pattern}).", "", everything, flags=fl | re.S)
        want = np.zeros(cs.N_CP, dtype=bool)
        want[np.frombuffer(kept.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)] = True
        want[0xD800:0xE000] = False
        dfa = compile_regex(pattern, "i" if fl & re.I else "" + ("a" if fl & re.A else ""))
        from pda.regex.syntax import translate

        node = translate(pattern, ("i" if fl & re.I else "") + ("a" if fl & re.A else ""))
        got = cs.to_mask(node.chars)
        assert np.array_equal(got, want), pattern
        assert dfa.n_states >= 2


# ---------------------------------------------------------------- UTF-8


@functools.cache
def every_code_point_encoded() -> list[bytes]:
    return [chr(c).encode("utf-8", "surrogatepass") for c in range(cs.N_CP)]


@given(st.lists(st.tuples(st.integers(0, cs.MAX_CP), st.integers(0, 3000)), min_size=1, max_size=6),
       st.booleans())
@settings(max_examples=5, deadline=None)
def test_class_dfa_accepts_exactly_its_code_points(ranges: list[tuple[int, int]], negate: bool) -> None:
    """Every one of the 1,114,112 code points (surrogates included, encoded): the byte DFA
    of a class accepts exactly the UTF-8 encodings of its members."""
    encoded = every_code_point_encoded()
    spans = [(lo, min(lo + width, cs.MAX_CP)) for lo, width in ranges]
    body = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in spans)
    pattern = f"[{'^' if negate else ''}{body}]"
    dfa = compile_regex(pattern)
    member = np.zeros(cs.N_CP, dtype=bool)
    for lo, hi in spans:
        member[lo : hi + 1] = True
    if negate:
        member = ~member
    member[0xD800:0xE000] = False  # no UTF-8 encoding: never matched
    assert np.array_equal(dfa.accepts_many(encoded), member), pattern
    assert_minimal(dfa)


def test_every_short_byte_string_is_judged_as_utf8() -> None:
    """All 1- and 2-byte strings and the 3-/4-byte strings around the UTF-8 edges: `(?s:.)`
    accepts exactly those that decode to one character."""
    dfa = compile_regex("(?s:.)")
    edge = list(range(0x70, 0xC5)) + [0xF5, 0xFF, 0x00]
    samples = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    samples += [bytes([a, b, c]) for a in range(0xE0, 0xF0) for b in edge for c in (0x7F, 0x80, 0xBF, 0xC0)]
    samples += [bytes([a, b, c, d]) for a in range(0xF0, 0xF8) for b in edge for c in (0x80, 0xBF, 0xC0)
                for d in (0x7F, 0x80, 0xBF)]

    def one_char(data: bytes) -> bool:
        try:
            return len(data.decode("utf-8")) == 1
        except UnicodeDecodeError:
            return False

    got = dfa.accepts_many(samples)
    assert got.tolist() == [one_char(x) for x in samples]


def test_invalid_utf8_never_matches() -> None:
    dfa = compile_regex("(?s:.)*")
    assert dfa.accepts("héllo 😀".encode())
    for bad in [b"\xff", b"\xc3", b"\xc0\x80", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                b"a\x80", b"\xf0\x9f\x98"]:
        assert not dfa.accepts(bad), bad
    assert dfa.run(dfa.start, b"\xff") == dfa.dead


def test_a_token_may_split_a_character() -> None:
    dfa = compile_regex("é+")
    s = dfa.run(dfa.start, b"\xc3")
    assert s != dfa.dead and not dfa.accept[s, 0] and dfa.live[s, 0]
    assert dfa.accept[dfa.run(s, b"\xa9"), 0]


# ---------------------------------------------------------------- DFA shape


def test_dfa_shape_and_dead_state() -> None:
    dfa = compile_regex("ab*")
    assert dfa.start == 0
    assert dfa.byte_class.shape == (256,) and dfa.byte_class.dtype == np.int32
    assert dfa.trans.shape == (dfa.n_states, int(dfa.byte_class.max()) + 1)
    assert (dfa.trans[dfa.dead] == dfa.dead).all()
    assert not dfa.accept[dfa.dead].any() and not dfa.live[dfa.dead].any()
    assert not dfa.trans.flags.writeable
    s = dfa.step(dfa.start, ord("a"))
    assert dfa.accept[s, 0] and dfa.live[s, 0]
    assert dfa.run(0, b"abbb") == dfa.run(s, b"bbb")
    assert dfa.run(0, b"ba") == dfa.dead


def test_multi_terminal_accept_and_live_rows() -> None:
    terms = [
        TerminalDef("IF", "if"),
        TerminalDef("NAME", "[a-z]+"),
        TerminalDef("NUM", "[0-9]+"),
    ]
    dfa = build_lexer_dfa(terms)
    assert dfa.names == ("IF", "NAME", "NUM")
    s = dfa.run(0, b"if")
    assert list(dfa.accept[s]) == [True, True, False]
    s = dfa.run(0, b"i")
    assert list(dfa.accept[s]) == [False, True, False]
    assert list(dfa.live[s]) == [True, True, False]
    s = dfa.run(0, b"ifx")
    assert list(dfa.live[s]) == [False, True, False]
    assert list(dfa.live[0]) == [True, True, True]
    assert_minimal(dfa)


def test_lazy_terminal_ends_at_first_match() -> None:
    greedy = build_lexer_dfa([TerminalDef("C", r"/\*(.|\n)*?\*/")])
    lazy = build_lexer_dfa([TerminalDef("C", r"/\*(.|\n)*?\*/", lazy=True)])
    assert greedy.accepts(b"/* a */ b */") and not lazy.accepts(b"/* a */ b */")
    s = lazy.run(0, b"/* a */")
    assert lazy.accept[s, 0] and not lazy.live[lazy.step(s, ord(" ")), 0]
    assert has_lazy_quantifier(r"/\*(.|\n)*?\*/")
    assert not has_lazy_quantifier(r"/\*(.|\n)*\*/")


@pytest.mark.parametrize(
    "pattern,flags",
    [(r'".*?(?<!\\)(\\\\)*?"', ""), (r'".*?(?<!\\)(\\\\)*?"(?:i)?', ""),
     (r'(?i:[ubf]?r?("(?!"").*?(?<!\\)(\\\\)*?"|\'(?!\'\').*?(?<!\\)(\\\\)*?\'))', ""),
     (r'(?s:(?i:[ubf]?r?(""".*?(?<!\\)(\\\\)*?"""|\'\'\'.*?(?<!\\)(\\\\)*?\'\'\')))', "")],
)
def test_escaped_string_idiom_equals_re_match(pattern: str, flags: str) -> None:
    assert not has_lazy_quantifier(pattern)
    dfa = compile_regex(pattern, flags)
    rx = re.compile(pattern)
    rnd = random.Random(7)
    alphabet = ['"', "'", "\\", "a", "\n", "i", "r", "b", "é"]
    for _ in range(4000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 9)))
        m = rx.match(text)
        assert dfa.accepts(text.encode()) == (m is not None and m.end() == len(text)), text


def test_negative_lookahead_followed_by_pattern_is_intersection() -> None:
    agree(r"/(?!/)[^\n]*", ["/", "//", "/a", "/a/", "/\n"])
    agree(r"(?=ab)[a-z]+", ["ab", "abc", "a", "ba"])
    agree(r"x(?!ab|c)[a-c]*", ["x", "xa", "xab", "xac", "xc", "xbab"])


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "pattern,construct",
    [
        (r"(a)\1", "back-reference"),
        (r"(a)?(?(1)b|c)", "conditional"),
        (r"(?<=a)b", "look-behind"),
        (r"a(?!b)", "look-ahead at the end"),
        (r"(a(?!b))c", "look-ahead inside a group"),
        (r"\bword\b", "word boundary"),
        (r"a^b", "anchor"),
        (r"a*+", "possessive"),
        (r"(?>ab)", "atomic group"),
    ],
)
def test_refusals_name_terminal_and_construct(pattern: str, construct: str) -> None:
    with pytest.raises(RegexError) as info:
        build_lexer_dfa([TerminalDef("MY_TERM", pattern)])
    msg = str(info.value)
    assert "MY_TERM" in msg and construct in msg and ";" in msg  # ...; <rewrite>
    assert info.value.terminal == "MY_TERM"


def test_invalid_regex_is_a_regex_error() -> None:
    with pytest.raises(RegexError, match="BROKEN"):
        build_lexer_dfa([TerminalDef("BROKEN", "a(b")])


# ---------------------------------------------------------------- limits and scale


def test_limit_names_the_terminals() -> None:
    with pytest.raises(LimitExceeded, match="BIG"):
        build_lexer_dfa([TerminalDef("BIG", "[a-z]{1,500}")], max_states=100)


def test_large_bounded_repeat_compiles() -> None:
    dfa = compile_regex("[a-z]{1,5000}")
    assert dfa.n_states == 5002  # 5001 distinct counters + dead
    assert dfa.accepts(b"a" * 5000) and not dfa.accepts(b"a" * 5001) and not dfa.accepts(b"")


def test_ten_thousand_word_alternation_compiles() -> None:
    rnd = random.Random(0)
    words: set[str] = set()
    while len(words) < 10_000:
        words.add("".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(3, 12))))
    dfa = compile_regex("|".join(sorted(words)))
    total = sum(len(w) for w in words)
    assert dfa.n_states < total  # trie-like, suffixes merged
    for w in list(words)[:200]:
        assert dfa.accepts(w.encode())
        assert not dfa.accepts(w.encode() + b"#")


# ---------------------------------------------------------------- sampler


def test_sample_from_dfa_is_accepted() -> None:
    rnd = random.Random(3)
    for pattern in [r"[a-z]+@[a-z]+\.(com|org)", r'"(?:[^"\\]|\\.)*"', r"\d{2,4}é?"]:
        dfa = compile_regex(pattern)
        for _ in range(50):
            data = sample_from_dfa(dfa, 0, rnd, max_len=20)
            assert data is not None and dfa.accepts(data)
            assert re.fullmatch(pattern, data.decode("utf-8"))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from('ab"é\\,{😀'), min_size=1, max_size=8),
       st.lists(st.text(alphabet=st.sampled_from('ab"é\\,{😀'), max_size=9), max_size=20))
def test_single_literal_terminal_dfa_equals_the_regex_path(literal: str, others: list[str]) -> None:
    """`terminal_dfa` builds a one-literal terminal directly; same language and prefixes as the
    regex path, and minimal."""
    from pda.lexer.terminals import terminal_dfa

    fast = terminal_dfa(TerminalDef("LIT", re.escape(literal)))
    slow = compile_regex(re.escape(literal))
    assert fast.n_states == slow.n_states
    assert_minimal(fast)
    for text in [literal, *others, *(literal[:k] for k in range(len(literal)))]:
        data = text.encode("utf-8")
        assert fast.accepts(data) == slow.accepts(data) == (text == literal)
        assert (fast.run(fast.start, data) == fast.dead) == (slow.run(slow.start, data) == slow.dead)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from('ab"\\.|(\x00\x7fé'), max_size=6), min_size=2,
                max_size=FINITE_SET_MIN_CHOICES - 1, unique=True))
def test_few_literals_terminal_dfa_is_the_regex_paths(strings: list[str]) -> None:
    """`terminal_dfa` builds a set of fewer than `FINITE_SET_MIN_CHOICES` ASCII literals directly
    (`literal_set_dfa`): the regex path's DFA byte for byte, as that path numbers states and classes."""
    from pda.lexer.terminals import terminal_dfa

    pattern = alternation_pattern(strings)
    slow = compile_regex(pattern)
    assert terminal_dfa(TerminalDef("SET", pattern)).digest == slow.digest
    if all(s.isascii() for s in strings):
        fast = literal_set_dfa([s.encode() for s in strings])
        assert fast.digest == slow.digest
        assert_minimal(fast)
    else:
        with pytest.raises(ValueError):
            literal_set_dfa([s.encode() for s in strings])


def test_compiling_and_serving_do_not_import_numpy_ma(tmp_path: Path) -> None:
    """A plain `np.unique(x)` imports `numpy.ma` on its first call (9-20 ms, paid inside a process's first
    compile or first mask): building DFAs (alphabet, UTF-8 expansion, composition, live rows), a shared
    product's growth, and a JSON Schema's compile and masks find distinct values without it
    (`pda.arrays.distinct`)."""
    code = (
        "import sys, json\n"
        "import numpy as np\n"
        "import pda\n"
        "from pda.regex import compile_regex\n"
        "from pda.regex.product import SharedProduct\n"
        "dfas = [compile_regex(p) for p in (r'\"(?:[^\"\\\\]|\\\\.)*\"', r'(?:foo|bar|baz)[0-9]+',\n"
        "                                   r'[é-ü\\u4e00-\\u9fff]+x', r'\\d{2,4}é?', r'(?i)[a-z]+')]\n"
        "SharedProduct(dfas, 1000).start([0, 1, 2, 3, 4])\n"
        "schema = {'type': 'object', 'properties': {'a': {'type': 'string', 'maxLength': 5}, 'b': {'enum': ['x', 3]}}}\n"
        "vocab = pda.Vocabulary.from_tokens(['{', '}', '\"', 'a', ':', '\"a\"', 'x', '3', 'é', None], eos_ids=[9])\n"
        "matcher = pda.Matcher(pda.compile(pda.Grammar.from_json_schema(json.dumps(schema)), vocab))\n"
        "bitmask = np.zeros((1, 1), dtype=np.int32)\n"
        "for token in [0, 5, 4, 2, 3, 8, 2, 1]:\n"
        "    matcher.fill_bitmask(bitmask, 0)\n"
        "    assert matcher.accept_token(token), token\n"
        "print('numpy.ma' in sys.modules)\n"
    )
    env = {**os.environ, "PDA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.stdout.strip() == "False"


# ---------------------------------------------------------------- Unicode properties

GENERAL_CATEGORIES = (
    "Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp Cc Cf Co Cn".split()
)
PROPERTIES = GENERAL_CATEGORIES + list("LMNPSZC") + ["Letter", "Greek", "Script=Latin", "Han", "Alphabetic"]


@functools.lru_cache(maxsize=1)
def _every_code_point() -> str:
    return np.arange(cs.N_CP, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


def regex_members(prop: str) -> np.ndarray:
    """Per code point: does the `regex` package's `\\p{prop}` match it (surrogates left out)?"""
    import regex

    mask = np.zeros(cs.N_CP, dtype=bool)
    mask[[m.start() for m in regex.finditer(rf"\p{{{prop}}}", _every_code_point())]] = True
    mask[0xD800:0xE000] = False
    return mask


@pytest.mark.parametrize("prop", PROPERTIES)
def test_unicode_property_sets_equal_the_regex_package(prop: str) -> None:
    from pda.regex.unicode_props import property_set

    members = regex_members(prop)
    assert np.array_equal(cs.to_mask(property_set(prop)), members)
    outside = ~members
    outside[0xD800:0xE000] = False
    assert np.array_equal(cs.to_mask(property_set(prop, negated=True)), outside)


@pytest.mark.parametrize(
    "pattern, members",
    [
        (r"\p{L}", lambda m: m["L"]),
        (r"\pN", lambda m: m["N"]),
        (r"\P{Lu}", lambda m: ~m["Lu"]),
        (r"[\p{Lu}\p{Nd}_]", lambda m: m["Lu"] | m["Nd"] | (np.arange(cs.N_CP) == ord("_"))),
        (r"[^\p{L}a]", lambda m: ~m["L"] & (np.arange(cs.N_CP) != ord("a"))),
        (r"[^\P{Greek}]", lambda m: m["Greek"]),
    ],
)
def test_unicode_property_dfa_on_every_code_point(pattern: str, members) -> None:
    """End to end (parse, sets, DFA, UTF-8): the terminal accepts exactly the property's code points."""
    masks = {p: regex_members(p) for p in ("L", "N", "Lu", "Nd", "Greek")}
    expected = members(masks)
    cps = [c for c in range(cs.N_CP) if not 0xD800 <= c <= 0xDFFF]
    got = compile_regex(pattern).accepts_many([chr(c).encode("utf-8") for c in cps])
    assert np.array_equal(got, expected[cps])


def test_unicode_property_in_sequences_and_repeats() -> None:
    dfa = agree(r"\p{Lu}\p{Ll}+|\p{N}{2}", [])
    assert dfa.accepts("Ñandú".encode())
    assert dfa.accepts("٣4".encode())
    assert not dfa.accepts("ñandú".encode())
    assert compile_regex(r"\p{L}+", "i").accepts("aÉ".encode())


@pytest.mark.parametrize(
    "pattern, message",
    [(r"\p{NoSuchProperty}", "unknown Unicode property"), (r"[a-\p{L}]", "range endpoint"), (r"\p{L\}", "malformed")],
)
def test_bad_unicode_property_is_a_regex_error(pattern: str, message: str) -> None:
    with pytest.raises(RegexError, match=message) as info:
        build_lexer_dfa([TerminalDef("WORD", pattern, line=7)])
    assert info.value.terminal == "WORD" and info.value.line == 7


def test_escaped_backslash_p_is_not_a_property() -> None:
    dfa = compile_regex(r"\\p{L}")
    assert dfa.accepts(b"\\p{L}") and not dfa.accepts(b"a")


# ---------------------------------------------------------------- nesting depth


@pytest.mark.parametrize("depth", [49, 50, 51, 500, 5000])
def test_deeply_nested_groups_compile(depth: int) -> None:
    """re's own parser recurses per group; pda parses any depth (and walks its IR on a heap stack)."""
    pattern = "(?:" * depth + "[ab]c" + ")?" * depth
    dfa = compile_regex(pattern)
    assert dfa.accepts(b"") and dfa.accepts(b"ac") and dfa.accepts(b"bc")
    assert not dfa.accepts(b"acac") and not dfa.accepts(b"c")


def test_deep_nesting_keeps_flags_lookahead_and_alternation() -> None:
    depth = 300
    pattern = "(?i:" + "(?:x|" * depth + "y" + ")" * depth + ")"
    assert agree(pattern, ["x", "X", "Y", "xy", ""]).accepts(b"Y")
    guarded = "(?!ab)" + "(" * 120 + "[a-c]+" + ")" * 120
    dfa = agree(guarded, ["a", "ab", "abc", "ba", "c"])
    assert dfa.accepts(b"ba") and not dfa.accepts(b"abc")
    verbose = "(?x)" + "( " * 60 + "a # a comment with a ( paren\n" + ") " * 60
    assert agree(verbose, ["a", " a", "", "aa"], "").accepts(b"a")


def test_deep_lazy_and_unbalanced_patterns() -> None:
    assert has_lazy_quantifier("(?:" * 2000 + "a+?" + ")" * 2000)
    with pytest.raises(RegexError, match="missing \\)"):
        compile_regex("(" * 3000 + "a")
    with pytest.raises(RegexError):
        compile_regex("(" * 3000 + "a" + ")" * 3001)


# ---------------------------------------------------------------- byte mode


def bytes_terminal(pattern: str, flags: str = "b") -> LexerDFA:
    return build_lexer_dfa([TerminalDef("RAW", pattern, flags=flags)])


def test_byte_mode_reads_raw_bytes() -> None:
    """Flag `b`: code points 0..255 are bytes; `.` and negated classes range over all bytes."""
    dfa = bytes_terminal(r"'[^'\n]*'")
    assert dfa.accepts(b"'isto \xe9 assim'")
    assert dfa.accepts("'é'".encode("utf-8"))
    assert dfa.accepts(b"'\xff\xc0\x80'")
    assert not dfa.accepts(b"'a\nb'")
    every_byte = [bytes([b]) for b in range(256)]
    assert bytes_terminal(".").accepts_many(every_byte).tolist() == [b != 10 for b in range(256)]
    assert bytes_terminal(r"\xe9").accepts_many(every_byte).tolist() == [b == 0xE9 for b in range(256)]
    assert bytes_terminal(r"\w").accepts_many(every_byte).tolist() == [
        re.fullmatch(rb"\w", bytes([b])) is not None for b in range(256)
    ]
    assert bytes_terminal("k", "bi").accepts_many(every_byte).tolist() == [b in b"kK" for b in range(256)]


def test_without_byte_mode_invalid_utf8_still_never_matches() -> None:
    assert not compile_regex(r"'[^'\n]*'").accepts(b"'isto \xe9 assim'")


def test_byte_mode_refuses_characters_above_ff() -> None:
    for pattern in ("\u0100", "[a-\u0101]", "\u20ac+"):
        with pytest.raises(RegexError, match="byte-mode"):
            bytes_terminal(pattern)
    with pytest.raises(RegexError, match="u flag"):
        bytes_terminal("a", "bu")


def test_byte_and_utf8_terminals_are_compiled_apart() -> None:
    with pytest.raises(ValueError, match="byte-mode"):
        build_lexer_dfa([TerminalDef("A", "a", flags="b"), TerminalDef("B", "b")])


@pytest.mark.parametrize("pattern", [
    "a", "(?:ab|c)+", "[^\\x00-\\U0010ffff]", "(?:)", "x?", "é{2,5}", "(?!ab)[a-c]{1,4}", "\"(?:[^\"\\\\]|\\\\.){0,40}\"",
    "(?:[0-9]+|[a-f]+)z", "\\p{L}+",
])
def test_trimmed_single_terminal_live_rows_equal_the_search(pattern: str) -> None:
    """`_finish(trimmed=True)` sets one terminal's live rows without searching; they equal `_live_rows`'s."""
    from pda.regex.dfa import _live_rows

    dfa = compile_regex(pattern)
    assert (dfa.live == _live_rows(dfa.trans, dfa.accept, dfa.dead)).all()


def _random_classes(rng: random.Random, n: int) -> list[tuple[str, str]]:
    """Patterns around random classes: plain ones (characters, escapes of one code point, ranges) and ones
    `_plain_class` must leave to `re._parser` (negated, `\\d`, properties, a literal `-` or `[`, `&&`, a backwards
    range, a code point past U+10FFFF), with flags."""
    atoms = ["a", "Z", "_", "é", "&", "~", "|", "\\-", "\\]", "\\[", "\\\\", "\\ ", "\\x00", "\\x7f", "\\u00e9", "\\ud800",
             "\\U0001f600", "\\U0010ffff", "\\u0041", "-", "[", "&&", "\\d", "\\w", "\\p{L}", "\\U00110000", "^"]
    out = []
    for _ in range(n):
        items = []
        for _ in range(rng.randint(1, 40)):
            a = rng.choice(atoms)
            items.append(a + "-" + rng.choice(atoms) if rng.random() < 0.3 else a)
        cls = "[" + ("^" if rng.random() < 0.1 else "") + "".join(items) + "]"
        pattern = rng.choice(["", "x", "(?:", "a|"]) + cls + rng.choice(["", "+", "{2,5}", "|b", ")", f"|{cls}y"])
        out.append((pattern, rng.choice(["", "i", "s", "x"])))
    return out


def test_long_plain_classes_translate_as_re_parses_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """`syntax._plain_class` (every class, with its length bound at 0) against `re._parser` (bound out of reach):
    the same IR, or the same error with the same message, and the same warnings (`[[`, `&&`: `re._parser`'s)."""
    cases = _random_classes(random.Random(3), 1500)

    def translations(bound: int) -> list[object]:
        monkeypatch.setattr(syntax, "PLAIN_CLASS_MIN_CHARS", bound)
        out: list[object] = []
        for pattern, flags in cases:
            syntax.release_parses()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    out.append(syntax._translate_whole(pattern, flags, "T", None)[0])
                except RegexError as e:
                    out.append(str(e))
            out.append([str(w.message) for w in caught])
        return out

    assert translations(0) == translations(10**9)
