"""GBNF front end: the grammar the shared `GrammarBuilder` builds, checked through its Lark
text against Lark's Earley parser, against Python's `re` (for regular GBNF), and in pda."""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path

import lark
import pytest

import pda
from pda.errors import GrammarError
from pda.grammar.gbnf import gbnf_to_lark

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus" / "grammars" / "llama_cpp_gbnf"


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.glob("*.gbnf"))


def needs_corpus() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus folder {CORPUS} is absent (../shared/corpus relative to the repo root)")


@functools.lru_cache(maxsize=32)
def earley(gbnf: str) -> lark.Lark:
    """A character-level reference: Earley with Lark's dynamic lexer (cached: json.gbnf takes seconds)."""
    return lark.Lark(gbnf_to_lark(gbnf), parser="earley", lexer="dynamic", start="root")


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def pda_grammar(gbnf: str) -> object:
    if not hasattr(pda, "Grammar"):
        pytest.skip("pda.Grammar (the engine) is not available yet")
    return pda.Grammar.from_gbnf(gbnf)


# -- the corpus ----------------------------------------------------------------

CASES: dict[str, tuple[list[str], list[str]]] = {
    "arithmetic.gbnf": (
        ["1=2\n", "x = ( 1+y ) \n", "a=b\nc=d\n", "(1)=2\n"],
        ["1=2", "=2\n", "1==2\n", "A=1\n"],
    ),
    "c.gbnf": (
        ["int main(){}", "int f(int x){return x;}", "float g(){x = 1+2;while(x<3){x = x+1;}}"],
        ["int main()", "main(){}", "int f(){return;}"],
    ),
    "chess.gbnf": (
        ["1. e4 e5\n2. Nf3 Nc6\n", "1. O-O-O Qxd8+\n12. exd5 a8=Q#\n"],
        ["1. e4 e5\n", "1. e9 e5\n2. a1 a2\n", "1. e4 e5\n0. a1 a2\n"],
    ),
    "english.gbnf": (["Hello, world!", "a\tb\nc", "x"], ["", " lead", "two  spaces", "é"]),
    "japanese.gbnf": (["こんにちは", "カタカナ 漢字、"], ["", "abc", "こ  に"]),
    "json.gbnf": (
        ['{"a": 1}', '{}', '{"k":[1,2.5,-3e1,"x\\n",true,null]}', '{"u":"\\u00e9"}', "{}\n  "],
        ["[1]", '{"a":1,}', '{"a":01}', '{"a":"\x01"}', " {}", '{"a":1e00}', '{"a":"\\x"}'],
    ),
    "json_arr.gbnf": (['[\n{"a":1},\n2]', "[\n]"], ["[1]", '[\n1,2]', "[\n] "]),
    "list.gbnf": (["- a\n", "- one\n- two\n"], ["- \n", "-a\n", "- a\r\n", "- a"]),
}


def test_corpus_cases_cover_every_file() -> None:
    needs_corpus()
    assert {p.name for p in corpus_files()} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_translates_and_loads_in_lark(name: str) -> None:
    needs_corpus()
    text = (CORPUS / name).read_text(encoding="utf-8")
    parser = earley(text)
    accept, reject = CASES[name]
    assert [s for s in accept if not lark_accepts(parser, s)] == []
    assert [s for s in reject if lark_accepts(parser, s)] == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_in_pda_agrees(name: str) -> None:
    needs_corpus()
    grammar = pda_grammar((CORPUS / name).read_text(encoding="utf-8"))
    accept, reject = CASES[name]
    assert [s for s in accept if not grammar.accepts(s)] == []
    assert [s for s in reject if grammar.accepts(s)] == []


def test_every_terminal_matches_one_character() -> None:
    needs_corpus()
    for path in corpus_files():
        parser = earley(path.read_text(encoding="utf-8"))
        for term in parser.terminals:
            regex = re.compile(term.pattern.to_regexp())
            assert term.pattern.min_width == term.pattern.max_width == 1, (path.name, term)
            assert regex.fullmatch("") is None


# -- characters and escapes -------------------------------------------------------

SAMPLE_CHARS = [*range(0x80), 0x85, 0xA0, 0xE9, 0x2028, 0x3042, 0xFFFD, 0x1F600, 0x10FFFF]


def gbnf_escape(cp: int) -> str:
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def test_every_character_survives_as_literal_and_class() -> None:
    """Each character, written as an escape, means exactly itself in the grammar."""
    for cp in SAMPLE_CHARS:
        esc = gbnf_escape(cp)
        probes = {chr(cp), chr((cp + 1) % 0x110000), "a"}
        for body, member in (
            (f'"{esc}"', lambda s, c=cp: s == chr(c)),
            (f"[{esc}]", lambda s, c=cp: s == chr(c)),
            (f"[{esc}b]", lambda s, c=cp: s in (chr(c), "b")),
            (f"[^{esc}]", lambda s, c=cp: s != chr(c)),
        ):
            parser = earley(f"root ::= {body}\n")
            for s in probes:
                assert lark_accepts(parser, s) == member(s), (hex(cp), body, s)


def test_raw_characters_and_named_escapes() -> None:
    parser = earley('root ::= "\\t\\r\\n\\\\\\"\\[\\]" [\\]\\[] "é😀"\n')
    assert lark_accepts(parser, '\t\r\n\\"[]]é😀')
    assert lark_accepts(parser, '\t\r\n\\"[][é😀')
    assert not lark_accepts(parser, '\t\r\n\\"[]xé😀')


def test_class_ranges_and_dash() -> None:
    parser = earley("root ::= [a-c,-.+-] [^0-9a-z]\n")
    # ",-." is a range (",", "-", "."); a trailing "-" is literal.
    for first in "abc,-.+":
        assert lark_accepts(parser, first + "A")
    assert not lark_accepts(parser, "dA")
    assert not lark_accepts(parser, "a5")
    assert lark_accepts(parser, "a\n")


def test_any_char_includes_newline() -> None:
    parser = earley("root ::= . .\n")
    assert lark_accepts(parser, "\n😀")
    assert not lark_accepts(parser, "x")


# -- structure: differential against Python's re --------------------------------------


def random_regular(rng: random.Random, depth: int) -> tuple[str, str]:
    """A random non-recursive GBNF expression over {a,b,c} and its Python regex."""
    kind = rng.randrange(8 if depth > 0 else 3)
    if kind == 0:
        s = "".join(rng.choice("abc") for _ in range(rng.randrange(0, 3)))
        return f'"{s}"', re.escape(s)
    if kind == 1:
        chars = "".join(sorted(set(rng.choices("abc", k=rng.randrange(1, 3)))))
        neg = rng.random() < 0.3
        return f"[{'^' if neg else ''}{chars}]", f"[{'^' if neg else ''}{chars}]"
    if kind == 2:
        return ".", "(?s:.)"
    if kind in (3, 4):
        parts = [random_regular(rng, depth - 1) for _ in range(rng.randrange(1, 4))]
        sep = " " if kind == 3 else " | "
        rsep = "" if kind == 3 else "|"
        return "(" + sep.join(p[0] for p in parts) + ")", "(?:" + rsep.join(p[1] for p in parts) + ")"
    g, r = random_regular(rng, depth - 1)
    g, r = f"({g})", f"(?:{r})"
    op = rng.choice(["*", "+", "?", "{2}", "{1,}", "{0,2}", "{,1}", "{1,3}"])
    rop = op.replace("{,", "{0,")
    return g + op, r + rop


def all_strings(alphabet: str, max_len: int) -> list[str]:
    out = [""]
    frontier = [""]
    for _ in range(max_len):
        frontier = [s + c for s in frontier for c in alphabet]
        out.extend(frontier)
    return out


def test_regular_gbnf_matches_python_re() -> None:
    rng = random.Random(6)
    strings = all_strings("abd", 3)
    for _ in range(40):
        gbnf, regex = random_regular(rng, 3)
        parser = earley(f"root ::= {gbnf}\n")
        compiled = re.compile(regex)
        for s in strings:
            assert lark_accepts(parser, s) == (compiled.fullmatch(s) is not None), (gbnf, regex, s)


def test_multiline_rules_comments_and_recursion() -> None:
    text = (
        "# balanced parentheses\n"
        "root ::= (\n"
        "    pair   # a comment inside a group\n"
        "  )* |\n"
        '  "x"\n'
        'pair ::= "(" root ")"\n'
        "left-rec ::= left-rec \"a\" | \"a\"\n"
    )
    parser = earley(text)
    for s, ok in [("", True), ("()", True), ("(())()", True), ("x", True), ("(x)", True), ("(()", False)]:
        assert lark_accepts(parser, s) == ok, s


def test_names_are_mangled_without_collisions() -> None:
    text = 'root ::= a-b a_b A-B start 5x\na-b ::= "1"\na_b ::= "2"\nA-B ::= "3"\nstart ::= "4"\n5x ::= "5"\n'
    assert lark_accepts(earley(text), "12345")


def test_empty_alternatives_and_literals() -> None:
    parser = earley('root ::= "" | "a" ( | "b") "" \nunused ::= ""\n')
    for s, ok in [("", True), ("a", True), ("ab", True), ("b", False)]:
        assert lark_accepts(parser, s) == ok, s


# -- errors name the line -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('root ::= foo\nfoo ::= bar\n', 2, "undefined rule 'bar'"),
        ('item ::= "a"\n', None, "no 'root'"),
        ('root ::= "a"\n\nx ::= "\\q"\n', 3, "unknown escape"),
        ('root ::= "a\n', 1, "unterminated string"),
        ('root ::= "a"\nroot ::= "b"\n', 2, "defined twice"),
        ('root ::= * "a"\n', 1, "must follow an item"),
        ('root ::= "a"{3,1}\n', 1, "max < min"),
        ('root ::= [a\n', 1, "unterminated character class"),
        ('root ::= []\n', 1, "empty character class"),
        ('root ::= ("a"\n', 1, "expecting ')'"),
        ('root ::= "\\xZZ"\n', 1, "hex digits"),
        ('root ::= "\\uD800"\n', 1, "not a Unicode scalar"),
        ('root = "a"\n', 1, "expecting ::="),
        ('root ::= "a" )\n', 1, "expecting newline"),
        ('root ::= <[1234]>\n', 1, "expecting newline"),
    ],
)
def test_errors_name_the_line(text: str, line: int | None, fragment: str) -> None:
    with pytest.raises(GrammarError) as info:
        pda.Grammar.from_gbnf(text)
    assert info.value.line == line
    assert fragment in str(info.value)


def test_deep_groups_need_no_nesting() -> None:
    """Groups become builder rules, so the IR and its Lark text are flat at any depth."""
    depth = 1000
    text = "root ::= " + '("a" ' * depth + '"b"' + ")" * depth
    assert "(" not in gbnf_to_lark(text)
    assert pda.Grammar.from_gbnf(text).accepts("a" * depth + "b")


def test_counted_repetition_takes_few_rules() -> None:
    """`{m,n}` is the builder's O(log n) repetition, not n alternatives."""
    grammar = pda.Grammar.from_gbnf('root ::= "a"{0,2000} "b"{3}\n')
    assert len(grammar.ir.rules) < 60
    assert grammar.ir.start == "root"
    assert grammar.accepts("a" * 2000 + "bbb") and grammar.accepts("bbb")
    assert not grammar.accepts("a" * 2001 + "bbb") and not grammar.accepts("abb")
