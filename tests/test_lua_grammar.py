"""pda/grammars/lua.lark is Lua 5.4: the Lua test suite is accepted, hand-written errors are refused.

The corpus is Lua 5.4.4's own test scripts (every file passes `luac5.4 -p`). Three of
them hold Latin-1 bytes inside strings, which are not UTF-8; the string and comment
terminals are byte-mode terminals, so every file is fed as its raw bytes, as luac reads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pda
from tests.conftest import GRAMMARS, corpus_path

KEYWORDS = (
    "and break do else elseif end false for function goto if in local nil not or repeat return then true until while"
).split()


@pytest.fixture(scope="module")
def grammar() -> pda.Grammar:
    return pda.Grammar.load(str(GRAMMARS / "lua.lark"))


def corpus_files() -> list[str]:
    folder = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "lua"
    return sorted(p.name for p in folder.glob("*.lua")) or ["<corpus absent>"]


@pytest.mark.parametrize("name", corpus_files())
def test_corpus_file_accepted(grammar: pda.Grammar, name: str) -> None:
    path = corpus_path("lua", name)
    grammar.check(path.read_bytes())


def test_corpus_has_non_utf8_files() -> None:
    """The raw-bytes claim is exercised: some corpus files are not UTF-8 (Latin-1 strings)."""
    corpus_path("lua")
    names = corpus_files()
    not_utf8 = []
    for name in names:
        try:
            corpus_path("lua", name).read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            not_utf8.append(name)
    assert not_utf8, "expected Latin-1 files in the Lua corpus"


BYTES_ACCEPT = [
    b"x = 'isto \xe9 assim'",
    b'x = "\xff\xfe\x80"',
    b"x = [[\xc3(\xa0\xed\xa0\x80]]",
    b"x = [==[ \xf5 ]==]",
    b"-- coment\xe1rio\nx = 1",
    b"--[[ \x80\x81 ]] x = 1",
    b"#!/usr/bin/lua \xe9\nx = 1",
    "x = 'isto \u00e9 assim'".encode("utf-8"),
]


@pytest.mark.parametrize("data", BYTES_ACCEPT)
def test_any_bytes_inside_strings_and_comments(grammar: pda.Grammar, data: bytes) -> None:
    grammar.check(data)


BYTES_REJECT = [
    b"x\xe9 = 1",  # a name is ASCII
    b"x = 1 \xe9",  # outside strings and comments the text is UTF-8 (and here no lexeme at all)
    b"x = '\xe9\n'",  # a short string still cannot hold a line break
    b"x = '\xe9",  # nor run to the end
]


@pytest.mark.parametrize("data", BYTES_REJECT)
def test_bytes_outside_strings_refused(grammar: pda.Grammar, data: bytes) -> None:
    assert not grammar.accepts(data)


def test_byte_strings_as_prefixes(grammar: pda.Grammar) -> None:
    """A string cut inside a multi-byte character or after a stray byte is still a viable prefix."""
    assert grammar.accepts_prefix(b"x = '\xe9")
    assert grammar.accepts_prefix(b"x = '\xc3")
    assert grammar.accepts_prefix("x = [[ é".encode("utf-8")[:-1])


def test_start_symbol_is_chunk(grammar: pda.Grammar) -> None:
    assert grammar.ir.start == "chunk"


ACCEPT = [
    # statements
    "",
    ";;;",
    "local x = 1",
    "local a, b, c = 1, 2",
    "x, y = y, x",
    "do local x end",
    "while true do break end",
    "repeat local x = 1 until x",
    "if a then b() elseif c then d() else e() end",
    "for i = 1, 10 do end",
    "for i = 10, 1, -1 do end",
    "for k, v in pairs(t) do print(k, v) end",
    "function f(a, b, ...) return ... end",
    "function a.b.c:m() end",
    "local function f() end",
    "return",
    "return 1, 2;",
    "do return end",
    "f{1, 2, 3}",
    "f'str'",
    'f"str" "more"',
    "f[[long]]",
    "obj:method(1):other{}",
    "a.b[c].d = e",
    "(f)()",
    "local t = {1, 2; x = 3, [4] = 5, f(),}",
    # goto and labels
    "::top:: goto top",
    "do goto continue; ::continue:: end",
    "local gotox = 1 goto gotox",
    # attribs
    "local x <const> = 5",
    "local f <close> = nil",
    "local a <const>, b, c <close> = 1, 2, 3",
    # operators, including 5.3/5.4 integer division and bitwise
    "x = 7 // 2",
    "x = 1 | 2 ~ 3 & 4 << 5 >> 6",
    "x = ~a",
    "x = - - 1",
    "x = not not a",
    "x = #t",
    "x = 2 ^ -3",
    "x = a .. b .. c",
    "x = a == b and c ~= d or e <= f",
    "x = 1 < 2 > 3 >= 4",
    "x = a % b * c / d",
    "x = ...",
    # numerals
    "x = 3 + 3.0 + 3.1416 + 314.16e-2 + 0.31416E1 + 34e1",
    "x = 0xff + 0XBEBADA + 0x0.1E + 0xA23p-4 + 0X1.921FB54442D18P+1",
    "x = .5 + 5. + 0x.8 + 0x8. + 1e+10",
    # strings and escapes
    r'x = "\a\b\f\n\r\t\v\\\"\'"',
    "x = 'a\\\nb'",
    "x = 'a\\z   \n   b'",
    r"x = '\x41\x7a'",
    r"x = '\u{48}\u{10FFFF}\u{7FFFFFFF}\u{000000041}'",
    r"x = '\65\066\0677\255\1x'",
    r"x = '\0' .. '\00' .. '\000'",
    "x = [[\nline1\nline2]]",
    "x = [==[ a ]] ]=] ]==]",
    "x = [====[ ]===] ]====]",
    # comments
    "-- line comment\nx = 1",
    "--[[ long\ncomment ]] x = 1",
    "--[==[ long ]] ]=]\ncomment ]==] x = 1",
    "x = 1 --[ not long\n",
    "x = 1 --[= not long\n",
    "--\nx = 1",
    # shebang
    "#!/usr/bin/env lua\nprint(1)",
    # keywords as prefixes of names
    "local ends, doing, if_, iffy = 1, 2, 3",
]


@pytest.mark.parametrize("text", ACCEPT)
def test_accepts(grammar: pda.Grammar, text: str) -> None:
    grammar.check(text)


REJECT = [
    # unbalanced blocks
    "end",
    "do end end",
    "do",
    "if x then",
    "if x then else else end",
    "while x do",
    "function f()",
    "repeat x = 1",
    "for i = 1 do end",
    "local function () end",
    # statements that are not statements
    "x",
    "1 + 1",
    "f() = 1",
    "x = ",
    "return 1 x = 2",
    "return return",
    "local x <foo> = 1",
    "local x <const = 1",
    "goto",
    "::a:",
    # operators that Lua does not have
    "x = 1 != 2",
    "x = a === b",
    "x = 1 ** 2",
    "x = a && b",
    "x = a || b",
    "x = !a",
    "x = a += 1",
    "x += 1",
    "x = 1 +* 2",
    "x = a ~== b",
    "x = a <> b",
    "x++",
    # numerals
    "x = 0x",
    "x = 1e",
    "x = 0x1p",
    "x = 1..2",
    # strings
    r"x = '\q'",
    r"x = '\256'",
    r"x = '\25' .. '\2567'",
    r"x = '\x4'",
    r"x = '\xg0'",
    r"x = '\u{}'",
    r"x = '\u{80000000}'",
    r"x = '\u48'",
    "x = 'unfinished",
    "x = 'line\nbreak'",
    "x = [[unfinished",
    "x = [=[ wrong level ]]",
    "x = [=====[ level five ]=====]",
    "--[=====[ level five ]=====]",
    "--[[ unfinished comment",
    # shebang only on the first line
    "x = 1\n#!lua",
    # keywords are not names
    *[f"local {kw} = 1" for kw in KEYWORDS],
]


@pytest.mark.parametrize("text", REJECT)
def test_rejects(grammar: pda.Grammar, text: str) -> None:
    assert not grammar.accepts(text)


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_names_near_keywords(grammar: pda.Grammar, keyword: str) -> None:
    """NAME is spelled as 'identifier minus the keywords' without look-around: check its edges."""
    for name in (keyword + "x", keyword[:-1], "_" + keyword, keyword + "_1", keyword.upper(), keyword[0]):
        assert grammar.accepts(f"local {name} = 1"), name
    assert grammar.accepts(f"t.{keyword}x = 1")
    assert not grammar.accepts(f"t.{keyword} = 1")


def test_decimal_escape_edges(grammar: pda.Grammar) -> None:
    """lua reads up to three digits: the value bound is on the longest digit run, as here."""
    for value in range(0, 300):
        for width in (1, 2, 3):
            digits = str(value).zfill(width)
            if len(digits) != width:
                continue
            text = f"x = '\\{digits}'"
            assert grammar.accepts(text) == (value <= 255), text
    assert grammar.accepts("x = '\\0019'")
    assert not grammar.accepts("x = '\\2569'")


def test_prefix_states(grammar: pda.Grammar) -> None:
    """Unfinished programs are viable prefixes; broken ones are not."""
    assert grammar.accepts_prefix("local function f(a, b)\n  if a then\n    return [==[ x")
    assert grammar.accepts_prefix("x = '\\u{7FFF")
    assert not grammar.accepts_prefix("x = '\\u{80000000")
    assert not grammar.accepts_prefix("end ")
    assert not grammar.accepts_prefix("x = 1 +* ")
