"""pda/grammars/python.lark is Python 3.11: the CPython stdlib sample parses, `ast.parse` is the oracle.

Everything runs on pda with its indenter (`_NEWLINE`/`_INDENT`/`_DEDENT` in the
parser state, docs/code_grammars.md). The whole valid corpus takes about 20 s of
CPU, so the default run checks every fourth file and `--long` checks them all.
The terminal regexes (strings, f-strings, numbers) are also checked on their own
(a grammar of those terminals alone) against `ast.parse`; the shipped NAME regex
against `str.isidentifier()` minus the hard keywords.
"""

from __future__ import annotations

import ast
import random
import re
import warnings
from pathlib import Path

import pytest

import pda
from tests.conftest import GRAMMARS, corpus_path

HARD_KEYWORDS = (
    "False None True and as assert async await break class continue def del elif else except finally for from "
    "global if import in is lambda nonlocal not or pass raise return try while with yield"
).split()


def grammar_text() -> str:
    return (GRAMMARS / "python.lark").read_text(encoding="utf-8")


def terminal_regex(name: str) -> str:
    match = re.search(rf"(?m)^{name}: /(.*)/$", grammar_text())
    assert match, name
    return match.group(1)


@pytest.fixture(scope="module")
def parser() -> pda.Grammar:
    """The shipped grammar on pda, with its indenter (`_NEWLINE`/`_INDENT`/`_DEDENT` in the state)."""
    return pda.Grammar.load(str(GRAMMARS / "python.lark"))


def pda_accepts(parser: pda.Grammar, source: bytes | str) -> bool:
    return parser.accepts(source)


def python_accepts(source: str | bytes) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes warn but parse
        try:
            ast.parse(source)
        except (SyntaxError, ValueError):
            return False
    return True


def valid_files() -> tuple[Path, list[Path]]:
    folder = corpus_path("python", "valid")
    files = sorted(folder.rglob("*.py"))
    assert len(files) >= 100
    return folder, files


def test_valid_corpus_sample_accepted(parser: pda.Grammar) -> None:
    """Every fourth file of the stdlib sample (sorted by path), the largest one included."""
    folder, files = valid_files()
    sample = set(files[::4]) | {max(files, key=lambda p: p.stat().st_size)}
    rejected = [str(p.relative_to(folder)) for p in sorted(sample) if not pda_accepts(parser, p.read_bytes())]
    assert rejected == []


@pytest.mark.slow
def test_valid_corpus_accepted(parser: pda.Grammar) -> None:
    folder, files = valid_files()
    assert all(python_accepts(p.read_bytes()) for p in files)
    rejected = [str(p.relative_to(folder)) for p in files if not pda_accepts(parser, p.read_bytes())]
    assert rejected == []


# Encoding cookies name a codec: the grammar is about syntax over UTF-8 text and
# does not know the codec registry, so a misspelt codec name is accepted.
KNOWN_ACCEPTED_INVALID = {"test/tokenizedata/bad_coding.py"}


def test_invalid_corpus_rejected(parser: pda.Grammar) -> None:
    folder = corpus_path("python", "invalid")
    files = sorted(folder.rglob("*.py"))
    accepted = {str(p.relative_to(folder)) for p in files if pda_accepts(parser, p.read_bytes())}
    assert accepted == KNOWN_ACCEPTED_INVALID & {str(p.relative_to(folder)) for p in files}


# Hand cases: each is judged by ast.parse too, so the expectation cannot drift.
CASES = [
    # walrus
    "if (n := 10) > 5:\n    pass\n",
    "if n := 10:\n    pass\n",
    "while chunk := f.read():\n    pass\n",
    "print(x := 1)\n",
    "[y := 1, y]\n",
    "x := 1\n",
    "def f(a=(b := 1)): pass\n",
    "lambda: x := 1\n",
    # decorators (PEP 614)
    "@a.b[1](c)\ndef f(): pass\n",
    "@(lambda f: f)\nclass C: pass\n",
    # match statement, soft keywords
    "match x:\n    case 1 | 2:\n        pass\n    case [a, *rest]:\n        pass\n    case {'k': v, **kw}:\n        pass\n"
    "    case Point(x=0, y=_) if y > 0:\n        pass\n    case -1:\n        pass\n    case 1 + 2j:\n        pass\n"
    "    case _:\n        pass\n",
    "match = 1\ncase = match\n_ = case\n",
    "match (a, b):\n    case (1, 2) as t:\n        pass\n",
    "match a, *b:\n    case _:\n        pass\n",
    # async
    "async def f():\n    async with a as b:\n        await c\n    async for x in y:\n        pass\n"
    "    return [i async for i in g()]\n",
    # star expressions (3.8-3.11)
    "def f():\n    return *a, *b\n",
    "def g():\n    yield *a, b\n",
    "for x in *a, *b:\n    pass\n",
    "x = a[*b]\n",
    "a, *b = c\n",
    "print(*a, *b, c, **d, **e)\n",
    "f(a, *b, c=1, *d, e=2, **f, g=3)\n",
    "f(**a, *b)\n",
    "f(a=1, b)\n",
    "f(**a, b)\n",
    # except*
    "try:\n    pass\nexcept* ValueError as e:\n    pass\n",
    "try:\n    pass\nexcept* ValueError:\n    pass\nexcept TypeError:\n    pass\n",
    # type hints
    "def f(a: int, /, b: 'str' = '', *args: int, c: list[int], **kw: dict) -> None: pass\n",
    "x: int\ny: tuple[int, ...] = ()\n",
    "lambda a, /, b, *, c: 0\n",
    # strings: prefixes, concatenation, escapes, f-strings
    "x = 'a' \"b\" '''c''' r'\\d' u'x' R'y' f'{z}' rf'{w}\\d' FR'x' Rb'x' bR'x'\n",
    "x = b'a' b'b'\n",
    "x = 'a' b'b'\n",
    "x = f'a' b'b'\n",
    "x = ur'x'\n",
    "x = bf'x'\n",
    "x = b'\\u1234'\n",
    "x = b'\xe9'\n",
    "x = '\\x4'\n",
    "x = '\\xab \\u1234 \\U0010ffff \\N{BULLET} \\q'\n",
    "x = '\\U00110000'\n",
    "x = '\\N{}'\n",
    "x = f'{a!r:>{width}} {b=} {c = !s} {{literal}} {d:%Y-%m-%d}'\n",
    "x = f\"{a['key']} {b[\"k\"]}\"\n",
    "x = f'{a[\"key\"]}'\n",
    "x = f'{}'\n",
    "x = f'{ }'\n",
    "x = f'{{}'\n",
    "x = f'}'\n",
    "x = f'{x!z}'\n",
    "x = f'{x:{y:{z}}}'\n",
    "x = f'{ {1: 2}[1] }'\n",
    "x = f'{lambda: 1}'\n",
    "x = f'{(lambda: 1)()}'\n",
    "x = f'''{\na\n}'''\n",
    "x = '''a\nb''' + \"\"\"c\"\"\"\n",
    "x = 'a\nb'\n",
    "x = '''a''''\n",
    # numbers
    "x = 0 + 00 + 1_000 + 0x_ff + 0o17 + 0b1_0 + 1.5e-3 + .5 + 5. + 1j + 1.5J + 0_0\n",
    "x = 01\n",
    "x = 1__0\n",
    "x = 0x\n",
    "x = 1_\n",
    "x = 09.5\n",
    # line continuations
    "x = 1 + \\\n    2\n",
    "x = 1 + \\ \n    2\n",
    # removed or never-Python syntax
    "x = a <> b\n",
    "print 'x'\n",
    "exec 'x'\n",
    "x = `a`\n",
    "def f(*): pass\n",
    "def f(*, **k): pass\n",
    "def f(a, *, b, **k): pass\n",
    "lambda *: 0\n",
    "lambda *, a: 0\n",
    # keywords are not names
    *[f"{kw} = 1\n" for kw in ("class", "def", "lambda", "None", "await", "async", "yield", "pass")],
    # with statements
    "with a as b, c as d:\n    pass\n",
    "with a as (b, c):\n    pass\n",
    # targets (CPython's star_targets, single_target, del_targets), parameters, imports
    "None = 1\n", "f() = 1\n", "a.b, c[0], *d = e\n", "(*a) = 1\n", "[*a] = 1\n", "(a, b): int\n",
    "(a): int = 1\n", "(a, b) += 1\n", "del (a), [b.c]\n", "del *a\n", "for a.b, c[0] in d: pass\n",
    "[x for *a in b]\n", "[*a for a in b]\n", "with a as *b: pass\n", "x = yield = 1\n", "f(a.b=1)\n",
    "def f(a=1, b): pass\n", "def f(a, b=1, /, c=2, *, d, e=3): pass\n", "def f(a=1, /, b): pass\n",
    "lambda a=1, b: 0\n", "from a import b,\n", "from a import (b,)\n", "x = 1 # a\rb\n",
    "class C(x for x in y): pass\n", "class C(*a, b=1, **k): pass\n", "f(x for x in y)\n",
    "def f(*a,): pass\n", "def f(*, a,): pass\n", "def f(x, *a, b=1,): pass\n", "def f(*,): pass\n",
    "def f(*a,,): pass\n", "def f(*a, **k,,): pass\n",
    "e[*j < e]\n", "e[*a if b else c]\n", "e[1:2, *a < b]\n", "e[*a:b]\n", "[*a < b]\n",
    # the first line's indentation (the indenter's leading-indentation state)
    "  x = 1\n", "\tx = 1\n", "  \nx = 1\n", "  # c\nx = 1\n", "  ", "  #c", "\n  x = 1\n", "# c\n  x = 1\n",
    # a form feed in indentation resets the column
    "\fx = 1\n", " \fx = 1\n", "\f x = 1\n", "if x:\n\f    y\n", "if x:\n    y\n  \fz\n",
    "if x:\n    y\n\f\n    z\n", "if x:\n \f   y\n  z\n", "x = (1,\n\f 2)\n",
    # NUL is refused everywhere, comment lines between statements included
    "x = 1 # a\x00\n", "x = 1\n# a\x00\ny = 2\n", "if x:\n    y\n    # \x00\n    z\n",
    "x = '\\\x00'\n", "x = r'\\\x00'\n",
    # a lone \r is a line break (CPython translates it to \n before tokenizing)
    "\r", "x = 1\ry = 2\r", "x = 'a\rb'\n", "x = '''a\rb'''\n", "x = '\\\r'\n", "if x:\r  y\r  z\r",
    "x = f'{1\r}'\n", "x = f'''{1\r}'''\n",
    # a line continuation may not end the text, but anything after it may (ast.parse reads a
    # final \r\n as two line breaks, so a continuation before it may end the text)
    "x = 1 \\\n", "x = 1 \\\r", "x = 1 \\\r\n", "x\\\n ", "x\\\n#c", "\\\n#", "\\\n\n", "x\\\r\ny\n",
    # TabError: indentation compared with tabs of 8 and of 1 must agree
    "if x:\n\ty\n        z\n", "if x:\n        y\n\tz\n", "if x:\n  \ty\n\tz\n", "if x:\n  \ty\n        z\n",
    "if x:\n if y:\n\tz\n", "if x:\n\tif y:\n\t z\n", "if x:\n\tif y:\n\t\tz\n w\n", "if x:\n    if y:\n\tz\n",
    "if x:\n\tif y:\n\t\tz\n    \tw\n", "if x:\n  y\n\t", "if x:\n  y\n\t#c\n  z\n", "x = (1,\n\t  2,\n        3)\n",
    "if x:\n\t\t               y\n\t\t               z\n", "if x:\n    y\n\t\t\t\t\t\t\t\t\t\t\tz\n",
    # a continuation in a line's indentation: the first backslash at a column k > 0 makes the
    # line's widths (k, k); at column 0 the next line's white space counts
    "def h():\n\t\\\nd\n\te", "if x:\n\t\\\n  y\n\tz\n", "if 1:\n\\\n  x\n", "if x:\n  y\n\t\\\n#c\n  z\n",
    "x = 1\n\\\n", "x = 1\n\t\\\n#c", "if x:\n    \\\n\n    y\n", "if x:\n  \\\n  \\\n y\n  z\n",
    "if x:\n\\\n\\\n  y\n  z\n", "x = (1,\n\t\\\n 2)\n", "if x:\n  y\n  \\\r\n  z\n", "if x:\n\f  \\\n  y\n",
    "if x:\n  \\\n\f y\n  z\n", "x = 1\n  \\\n", "x = 1\n  \\\n ",
    "if x:\n\t\t               y\n                               z\n", "if x:\n  y\n  \\\rz\n",
    # a number runs into a keyword only where it is and/else/for/if/in/is/not/or
    "with (0as c): pass\n", "with (0 as c): pass\n", "raise 1from x\n", "x = 1.5as\n", "x = 0b1as\n",
    "x = [0xf for y in z]\n", "x = [0x1for y in z]\n", "x = 1jif y else 2\n", "x = 1e5if y else 2\n",
    "x = 1_0if y else 2\n", "x = 1.if y else 2\n", "x = 1or 2\n", "x = 1in y\n", "x = 1is y\n", "x = 1and 2\n",
    # a complex literal pattern is real +/- imaginary
    "match x:\n case 1j+2: pass\n", "match x:\n case 1+2: pass\n", "match x:\n case -1.5-2j: pass\n",
    # non-printable characters in an f-string field's expression (in its strings and format spec they are text)
    "x = f'{1\x7f}'\n", "x = f'{\x85}'\n", "x = f'{1\u2028}'\n", "x = f'{1\ufeff}'\n", "x = f'{\t{\x0b}}'\n",
    "x = f'{\"\x7f\"}'\n", "x = f'{1:\x7f}'\n", "x = f'''{\"a\nb\"}'''\n",
    # Unicode names: the shape is checked, not the name
    "x = '\\N{-}'\n", "x = '\\N{ A}'\n", "x = '\\N{A  B}'\n", "x = '\\N{TIBETAN MARK BKA- SHOG YIG MGO}'\n",
    "x = '\\N{latin small letter a}'\n", "x = b'\\N{-}'\n",
]


# Where the grammar knowingly differs from ast.parse (see docs/code_grammars.md):
# the expression inside an f-string replacement field is a terminal, checked for
# brackets, quotes and some non-printable characters but not parsed. A number glued to
# `and`/`for` is refused (CPython deprecates it): the lexeme `1a`, a prefix of the error
# lexeme `1as`, cannot split into `1` + `and`.
KNOWN_DIFFERENCES = {
    "x = f'{lambda: 1}'\n",
    "x = 1and 2\n",
    # indentation longer than 16 characters that mixes tabs and spaces is not checked for
    # TabError (pda/parser/indent.py, MIXED_MAX_LENGTH)
    "if x:\n\t\t               y\n                               z\n",
}


@pytest.mark.parametrize("source", CASES)
def test_hand_cases_agree_with_ast(parser: pda.Grammar, source: str) -> None:
    expected = python_accepts(source)
    if source in KNOWN_DIFFERENCES:
        expected = not expected
    assert pda_accepts(parser, source.encode("utf-8")) == expected, source


def test_name_regex_is_identifier_minus_hard_keywords() -> None:
    name = re.compile(terminal_regex("NAME"))
    for keyword in HARD_KEYWORDS:
        assert not name.fullmatch(keyword)
        for near in (keyword + "_", keyword[:-1] or "_", "_" + keyword, keyword + "é", keyword.upper()):
            assert name.fullmatch(near) is not None, near
    rng = random.Random(11)
    alphabet = "".join(sorted(set("".join(HARD_KEYWORDS)))) + "_é1λ"
    for _ in range(20000):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9)))
        expected = word.isidentifier() and word not in HARD_KEYWORDS
        assert (name.fullmatch(word) is not None) == expected, word


@pytest.fixture(scope="module")
def literal_grammar() -> pda.Grammar:
    """The grammar's literal terminals through pda, without the statement layer."""
    text = grammar_text()
    body = text[text.index("\nSTRING: /") :]  # the terminal definitions, to the end of the file
    return pda.Grammar.from_lark(
        "start: (STRING | FSTRING)+ | BYTES+ | number\n"
        "number: DEC_NUMBER | HEX_NUMBER | BIN_NUMBER | OCT_NUMBER | FLOAT_NUMBER | IMAG_NUMBER\n"
        "%ignore \" \"\n" + body + "\n"
    )


LITERALS = [
    "'a'", '"a"', "'''a\nb'''", '"""a"""', "'a\\'b'", "'a\\\nb'", "r'\\'", "r'\\''", "'\\N{EM DASH}'",
    "'\\777'", "'\\xZZ'", "'\\u12'", "'\\U0010FFFF'", "'\\U00110000'", "b'\\xff'", "b'\\N{x}'", "b'é'",
    "f'{x}'", "f'{x!r}'", "f'{x!x}'", "f'{x:>10}'", "f'{x:{w}.{p}}'", "f'{x:{w:{p}}}'", "f'{{'", "f'}}'",
    "f'{'", "f'}'", "f'{x=}'", "f'{x = }'", "f'{a[\"b\"]}'", "f'{a['b']}'", "f\"{a['b']}\"", "f'{\"\\n\"}'",
    "f'{x#}'", "f'{ {1: 2} }'", "f'{{1: 2}}'", "f'''{\nx\n}'''", "f'{\nx}'", "rf'\\{x}'", "f'\\N{DASH}'",
    "'a' 'b'", "'a' f'b'", "b'a' b'b'", "'''a''''", "''", "''''''", "'''''''",
    "0", "00", "01", "10", "1_0", "1__0", "1_", "0x1F", "0X_1", "0o7", "0o8", "0b2", "1.", ".1", "1e5",
    "1e", "1.5j", "1J", "0_0", "0_1", "09.5", "09j", "0e0",
]


# \N{...} takes any name of the right shape (letters, digits, single spaces and hyphens): the
# Unicode name list is not in the grammar.
KNOWN_LITERAL_DIFFERENCES = {"f'\\N{DASH}'"}


@pytest.mark.parametrize("literal", LITERALS)
def test_literal_terminals_agree_with_ast(literal_grammar: pda.Grammar, literal: str) -> None:
    """pda's DFAs of the shipped terminals against ast.parse on one expression."""
    expected = python_accepts(f"({literal})")
    if literal in KNOWN_LITERAL_DIFFERENCES:
        expected = not expected
    assert literal_grammar.accepts(literal) == expected, literal


def eos_biased_tiny_model():
    """The tiny random Qwen2, nudged towards code that ends: ASCII tokens +4 (keywords,
    operators, line breaks and indentation get drawn, so blocks occur); EOS +8; after 8
    generated tokens, EOS, closing brackets and quotes and the line break +1 per token, so
    that most runs end by EOS (where the grammar allows it) within a few dozen tokens.
    A fixed EOS bias either ends most runs at once or lets most run to the token limit
    inside an open bracket. Otherwise a random model."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from pda.vocab.lookups import vocabulary_for
    from pda.demo.models import load_tiny_qwen2

    model, tokenizer = load_tiny_qwen2()

    class EosBiased(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model
            self.config = model.config
            vocab = vocabulary_for(tokenizer)
            ascii_tokens = [i for i, t in enumerate(vocab.tokens) if t and t.isascii()]
            bias = torch.zeros(model.config.vocab_size)
            bias[ascii_tokens] = 4.0
            closers = [i for i, t in enumerate(vocab.tokens) if t in (b")", b"]", b"}", b"'", b'"', b"\n")]
            eos = torch.zeros(model.config.vocab_size)
            eos[[tokenizer.eos_token_id, *closers]] = 1.0
            bias[tokenizer.eos_token_id] = 8.0
            self.register_buffer("bias", bias)
            self.register_buffer("closing", eos)
            self.generated = 0

        def get_output_embeddings(self):
            return self.inner.get_output_embeddings()

        def forward(self, input_ids, cache=None, use_cache=True, logits_to_keep=0):
            # the first pass of a run reads the prompt (no cache); each later one, new tokens
            self.generated = 0 if cache is None else self.generated + input_ids.shape[1]
            out = self.inner(input_ids=input_ids, cache=cache, use_cache=use_cache, logits_to_keep=logits_to_keep)
            out.logits = out.logits + self.bias + max(0, self.generated - 8) * self.closing
            return out

    return EosBiased(), tokenizer


def generated_programs(parser: pda.Grammar, seeds: range, max_new_tokens: int) -> tuple[int, list[str]]:
    """Sample one program per seed; every run that ends by EOS must pass ast.parse."""
    from pda.generation import generate  # pda.generate is not re-exported yet

    model, tokenizer = eos_biased_tiny_model()
    terminated, failures = 0, []
    for seed in seeds:
        result = generate(model, tokenizer, parser, "# Python\n", seed=seed, max_new_tokens=max_new_tokens)
        if result.terminated:
            terminated += 1
            if not python_accepts(result.text):
                failures.append(result.text)
        else:
            assert parser.accepts_prefix(result.text), result.text
    return terminated, failures


# python.lark uses the basic lexer mode (`// pda: lexer=basic`): lexemes are cut and
# typed by all terminals, as CPython's tokenizer does. Under the contextual mode NAME
# is not a candidate where the parser cannot take one, so `a invocation` would lex as
# `a in vocation`, and the random model writes such text.
RUN_IN = ["a invocation\n", "x = a ifb else c\n", "async defh(): pass\n", "x = [a fori in b]\n", "x = 1 isnot 2\n"]


@pytest.fixture(scope="module")
def contextual_parser() -> pda.Grammar:
    return pda.Grammar.from_lark(grammar_text(), start="file_input", lexer="contextual")


@pytest.mark.parametrize("source", RUN_IN)
def test_keyword_does_not_run_into_a_name(parser: pda.Grammar, contextual_parser: pda.Grammar, source: str) -> None:
    assert not python_accepts(source)
    assert not pda_accepts(parser, source)
    assert contextual_parser.accepts(source)  # what the basic mode is for


def test_keywords_are_not_names(parser: pda.Grammar) -> None:
    """`def if():` is refused: NAME cannot match a hard keyword, so the keyword's lexeme type is all there is."""
    for keyword in HARD_KEYWORDS:
        assert not pda_accepts(parser, f"def {keyword}(): pass\n"), keyword
        assert pda_accepts(parser, f"def {keyword}_(): pass\n"), keyword
    for soft in ("match", "case", "_", "type"):
        assert pda_accepts(parser, f"def {soft}(): pass\n"), soft


def test_generated_programs_parse(parser: pda.Grammar) -> None:
    terminated, failures = generated_programs(parser, range(4), 32)
    assert failures == []
    assert terminated >= 1


@pytest.mark.slow
def test_hundred_generated_programs_parse(parser: pda.Grammar) -> None:
    terminated, failures = generated_programs(parser, range(1000, 1160), 48)
    print(f"160 runs: {terminated} ended by EOS, {len(failures)} of them refused by ast.parse")
    assert failures == []
    assert terminated >= 100
