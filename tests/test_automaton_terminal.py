"""Terminals given as automata (`TerminalDef.automaton`): the DFA built from the automaton equals the
regex path's on the same language, every consumer of a terminal's pattern treats the automaton's
description as no regex, and `multipleOf` (built as such a terminal) is exact for every step, range
and mode against `jsonschema`; the sampler draws from them and masks equal the reference path."""

from __future__ import annotations

import decimal
import json
import random
import re
import warnings
from decimal import Decimal
from typing import Any

import pytest

import pda
from pda.grammar.alternatives import merge_alternative_terminals
from pda.grammar.builder import GrammarBuilder
from pda.grammar.ir import GrammarIR, Rule, TerminalAutomaton, TerminalDef
from pda.grammar.json_schema import MAX_NUMBER_INTEGER_DIGITS, JsonSchemaWarning
from pda.grammar.multiples import multiples_automaton
from pda.lexer.terminals import terminal_dfa
from pda.reference import mask_mismatches, random_walk_states
from pda.regex import LexerDFA, build_lexer_dfa, compile_regex
from pda.regex.finite_set import finite_set_dfa
from pda.testing.sampler import GrammarSampler, ReferenceRecognizer
from pda.trie.lookup import is_finite_set

jsonschema = pytest.importorskip("jsonschema")

# Digit strings whose value is a multiple of 3: state 1 + (value mod 3) after the first digit.
_MOD3_CLASSES = [f"[{''.join(str(d) for d in range(10) if d % 3 == k)}]" for k in range(3)]
MOD3 = TerminalAutomaton(4, 0, (1,), tuple((0, _MOD3_CLASSES[k], 1 + k) for k in range(3))
                         + tuple((1 + r, _MOD3_CLASSES[k], 1 + (r + k) % 3) for r in range(3) for k in range(3)))


def same_language(a: LexerDFA, b: LexerDFA) -> bool:
    """Whether two one-terminal byte DFAs accept the same strings: their product, every byte, breadth first."""
    seen = {(a.start, b.start)}
    todo = [(a.start, b.start)]
    while todo:
        p, q = todo.pop()
        if bool(a.accept[p, 0]) != bool(b.accept[q, 0]):
            return False
        for byte in range(256):
            nxt = (a.step(p, byte), b.step(q, byte))
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return True


def automaton_dfa(a: TerminalAutomaton, flags: str = "", lazy: bool = False) -> LexerDFA:
    return build_lexer_dfa([TerminalDef("A", a.describe(), flags=flags, lazy=lazy, automaton=a)])


def lark_regex_of(a: TerminalAutomaton) -> str:
    """The regex the builder writes for an automaton terminal in Lark text (state elimination)."""
    builder = GrammarBuilder()
    name = builder.automaton_terminal(a)
    line = next(x for x in builder.lark([name]).splitlines() if x.startswith(name + ":"))
    return line.split(": ", 1)[1][1:-1].replace("\\/", "/")


# ------------------------------------------------------------------ the DFA from an automaton


HAND_MADE = [
    # (automaton, flags, an equivalent regex written by hand)
    # Multi-character labels, overlapping edges (an NFA), a self-loop, a nullable label.
    (TerminalAutomaton(3, 0, (2,), ((0, "ab|a", 1), (0, "a", 2), (1, "b*", 2), (1, "c", 1), (2, "(?:xy)+", 2))),
     "", "(?:(?:ab|a)c*b*|a)(?:xy)*"),
    # Flags apply to every label: case folding, and `.` with DOTALL.
    (TerminalAutomaton(2, 0, (1,), ((0, "k", 1), (1, ".", 1))), "is", "k.*"),
    # Unicode labels (UTF-8 spelled out) and a JSON-string unit.
    (TerminalAutomaton(2, 0, (1,), ((0, '"', 1), (1, r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})', 1))),
     "", r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*'),
    (TerminalAutomaton(3, 1, (0,), ((1, "é", 2), (2, r"\p{L}+", 0), (0, "ü", 1))), "", r"(?:é\p{L}+ü)*é\p{L}+"),
]


@pytest.mark.parametrize("case", range(len(HAND_MADE)))
def test_automaton_dfa_equals_the_regex_dfa(case: int) -> None:
    a, flags, regex = HAND_MADE[case]
    built = automaton_dfa(a, flags)
    assert same_language(built, compile_regex(regex, flags))
    assert same_language(built, compile_regex(lark_regex_of(a), flags))  # the builder's Lark spelling too


def test_multiples_of_three_by_arithmetic() -> None:
    built = automaton_dfa(MOD3)
    assert same_language(built, compile_regex(lark_regex_of(MOD3)))
    rng = random.Random(3)
    texts = [str(n).zfill(w) for w in range(1, 5) for n in range(10**w)]
    texts += [str(rng.randrange(10**30)) for _ in range(500)]
    assert all(built.accepts(t.encode()) == (int(t) % 3 == 0) for t in texts)
    assert not built.accepts(b"")


def test_byte_mode_and_lazy_automata() -> None:
    """Flag `b` reads raw bytes in every label; a lazy automaton ends at its first match."""
    raw = TerminalAutomaton(2, 0, (1,), ((0, r"\xe9", 1), (1, r"[\x80-\xff]", 1)))
    assert same_language(automaton_dfa(raw, "b"), compile_regex(r"\xe9[\x80-\xff]*", "b"))
    comment = TerminalAutomaton(3, 0, (2,), ((0, "/\\*", 1), (1, "(?:.|\\n)", 1), (1, "\\*/", 2)))
    assert same_language(automaton_dfa(comment, lazy=True), compile_regex(r"/\*(?:.|\n)*?\*/", lazy=True))


@pytest.mark.parametrize("p,scale,lo,hi,guard", [
    (3, 0, None, None, ""), (7, 0, None, None, ""), (7, 0, 100, 10**6, ""), (7, 0, -(10**6), -100, ""),
    (12, 0, -55, None, ""), (25, 2, None, 1234, ""), (7, 0, None, None, r"(?!-?[0-9]+\.|-0)"), (8, 0, 0, None, ""),
])
def test_multiples_automaton_equals_its_regex(p: int, scale: int, lo: int | None, hi: int | None, guard: str) -> None:
    """Where the multiples have a regex of reasonable length, its DFA is the automaton's."""
    a = multiples_automaton(p, scale, lo, hi, guard)
    assert a is not None
    assert same_language(automaton_dfa(a), compile_regex(lark_regex_of(a)))


def test_cost_is_the_automatons() -> None:
    """The multiples of 97 (a regex of astronomical length) have a 100-state automaton, built at once."""
    a = multiples_automaton(97, 0, None, None)
    assert a is not None and a.n_states < 110
    dfa = automaton_dfa(a)
    assert dfa.n_states < 110
    assert dfa.accepts(str(97 * 123456789).encode()) and not dfa.accepts(str(97 * 123456789 + 1).encode())


# ------------------------------------------------------------------ the description is no regex


def test_the_description_is_never_read_as_a_regex() -> None:
    """A pattern that would be a literal (or a literal set) says nothing when an automaton is given."""
    for pattern in ("abc", "(?:abc|abd|abe|abf|abg|abh|abi|abj)"):
        t = TerminalDef("T", pattern, automaton=MOD3)
        assert finite_set_dfa(t) is None and not is_finite_set(t)
        dfa = terminal_dfa(t)
        assert dfa.accepts(b"1212") and not dfa.accepts(b"abc") and not dfa.accepts(b"121")


def test_ir_hash_memo_and_cache_keys_follow_the_automaton() -> None:
    other = TerminalAutomaton(4, 0, (2,), MOD3.edges)  # value ≡ 1 (mod 3)
    rules = (Rule("start", ("T",)),)
    first = GrammarIR((TerminalDef("T", "<same text>", automaton=MOD3),), rules, "start")
    second = GrammarIR((TerminalDef("T", "<same text>", automaton=other),), rules, "start")
    assert first.content_hash != second.content_hash
    again = GrammarIR((TerminalDef("T", "<same text>", automaton=MOD3),), rules, "start")
    assert first.content_hash == again.content_hash
    assert terminal_dfa(first.terminals[0]).accepts(b"12") and terminal_dfa(second.terminals[0]).accepts(b"1")
    assert not terminal_dfa(second.terminals[0]).accepts(b"12")


def test_builder_deduplicates_automata_and_writes_the_ir() -> None:
    builder = GrammarBuilder()
    a = builder.automaton_terminal(MOD3, "M")
    assert builder.automaton_terminal(TerminalAutomaton(4, 0, (1,), MOD3.edges), "M") == a  # equal content
    assert builder.automaton_terminal(MOD3, "M", priority=2) != a
    assert builder.terminal(MOD3.describe()) != a  # a regex equal to the description is another terminal
    ir = builder.ir([[a]])
    (t,) = ir.terminals
    assert t.automaton == MOD3 and t.pattern == MOD3.describe() and not t.lazy and not t.literal
    assert pda.Grammar(ir).accepts("123") and not pda.Grammar(ir).accepts("124")


def test_alternatives_are_not_merged_and_embedding_keeps_the_automaton() -> None:
    a, b = (TerminalDef(n, "<x>", automaton=MOD3) for n in ("A", "B"))
    c = TerminalDef("C", "z")
    ir = GrammarIR((a, b, c), (Rule("start", ("A",)), Rule("start", ("B",)), Rule("start", ("C",))), "start")
    assert merge_alternative_terminals(ir) is ir
    host = pda.Grammar.from_lark('start: "n=" %json {"type": "integer", "multipleOf": 9}\n')
    assert any(t.automaton is not None for t in host.ir.terminals)
    assert host.accepts("n=81") and not host.accepts("n=82")


def test_lark_text_of_a_long_automaton_is_refused() -> None:
    a = multiples_automaton(9, 0, None, None)
    assert a is not None
    with pytest.raises(pda.GrammarError, match="no Lark text"):
        lark_regex_of(a)


# ------------------------------------------------------------------ multipleOf against jsonschema

STEPS = [9, 11, 13, 33, 77, 97, 0.3, 2.5, 1e-3, 0.07, 1.3]
RANGES: list[dict[str, Any]] = [
    {},
    {"minimum": 40},
    {"exclusiveMaximum": -17.5},
    {"minimum": -1000, "maximum": 5000},
    {"exclusiveMinimum": 2.6, "maximum": 10**13},
    {"minimum": -(10**15), "exclusiveMaximum": -(10**9)},
]
_PLAIN = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
_INTEGER_LITERAL = re.compile(r"-?(?:0|[1-9][0-9]*)")
# An unbounded integer that any integer satisfies, with exact=True (numbers.py's integer path).
_ANY_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.0+)?(?:[eE]\+?[0-9]+)?")


def _value(text: str) -> int | Decimal | None:
    """The JSON value of a text (integral numbers as int, others as exact Decimal); None if not JSON."""
    try:
        x = json.loads(text, parse_float=Decimal, parse_int=int)
    except ValueError:
        return None
    if isinstance(x, Decimal) and x == x.to_integral_value():
        return int(x)
    return x


def expected(schema: dict[str, Any], text: str, exact: bool) -> bool:
    """jsonschema's verdict on the value, within the spellings the mode writes
    (numbers.py): plain decimals only (a multipleOf has no exponent; a step that every
    integer meets leaves an unbounded integer, which with exact=True has); by default an
    integer type's are integer literals without `-0`, and a number stays under
    10^MAX_NUMBER_INTEGER_DIGITS when no bound says otherwise."""
    value = _value(text)
    step = Decimal(str(schema["multipleOf"]))
    every_integer = schema["type"] == "integer" and (1 / step) == (1 / step).to_integral_value()
    spelled = _ANY_INTEGER if every_integer and exact and schema.keys() == {"type", "multipleOf"} else _PLAIN
    if value is None or not spelled.fullmatch(text):
        return False
    if not exact:
        if schema["type"] == "integer" and (not _INTEGER_LITERAL.fullmatch(text) or text == "-0"):
            return False
        cap = 10**MAX_NUMBER_INTEGER_DIGITS
        if schema["type"] == "number" and abs(value) >= cap:
            return False
    # Exact arithmetic: the schema's numbers as Decimal, enough precision for any text here.
    exact_schema = json.loads(json.dumps(schema), parse_float=Decimal)
    with decimal.localcontext() as ctx:
        ctx.prec = 400
        return jsonschema.Draft202012Validator(exact_schema).is_valid(value)


def texts_for(schema: dict[str, Any], rng: random.Random) -> list[str]:
    """Multiples and near misses around 0 and every bound, large ones, and odd spellings."""
    step = Decimal(str(schema["multipleOf"]))
    centres = [Decimal(0)] + [Decimal(str(v)) for k, v in schema.items() if k.endswith(("imum", "Minimum", "Maximum"))]
    values: set[Decimal] = set()
    for c in centres:
        base = (c / step).to_integral_value() * step
        for i in range(-12, 13):
            values.add(base + i * step)
            values.add(base + i * step + rng.choice((1, -1)) * step / rng.choice((2, 3, 10)))
    for _ in range(20):
        n = rng.randrange(-(10**18), 10**18)
        values.update((n * step, n * step + Decimal(1) / 7 * step))
    texts = []
    for v in values:
        v = v.quantize(Decimal(1).scaleb(-6)) if v != v.to_integral_value() else v.to_integral_value()
        text = format(v.normalize() if v else Decimal(0), "f")
        texts += [text, text + ("00" if "." in text else ".0")]
    texts += ["-0", "-0.0", "0.000", "00", "007", "-09", "9e0", "1.8E1", "27e+0", "1.", ".9", "+9", "-", "0x9"]
    return texts


@pytest.mark.parametrize("step", STEPS, ids=str)
def test_multiple_of_is_exact_against_jsonschema(step: float) -> None:
    rng = random.Random(str(step))
    for bounds in RANGES:
        for typ in ("integer", "number"):
            schema = {"type": typ, "multipleOf": step, **bounds}
            texts = texts_for(schema, rng)
            for exact in (True, False):
                with warnings.catch_warnings():
                    warnings.simplefilter("error", JsonSchemaWarning)  # no approximation
                    try:
                        grammar = pda.Grammar.from_json_schema(schema, exact=exact)
                    except pda.GrammarError as exc:
                        assert "accepts no JSON value" in str(exc)
                        assert not any(expected(schema, t, exact) for t in texts), schema
                        continue
                for text in texts:
                    assert grammar.accepts(text) == expected(schema, text, exact), (schema, exact, text)


# ------------------------------------------------------------------ sampler and masks


def test_sampler_draws_accepted_multiples() -> None:
    grammar = pda.Grammar.from_json_schema({"type": "array", "items": {"type": "integer", "multipleOf": 9}})
    sampler = GrammarSampler(grammar)
    drawn = list(sampler.samples(40, seed=3))
    numbers = [x for text in drawn for x in json.loads(text)]
    assert len(numbers) > 10 and all(x % 9 == 0 for x in numbers)
    assert all(grammar.accepts(text) for text in drawn)
    reference = ReferenceRecognizer(grammar.ir)
    assert reference.accepts("[18, -81]") and not reference.accepts("[18, -80]") and not reference.accepts("[18, -8")


def test_reference_recognizer_viability_on_an_automaton() -> None:
    """The sampler's independent recogniser reads an automaton terminal's prefixes right."""
    grammar = pda.Grammar.from_json_schema({"type": "integer", "multipleOf": 13, "minimum": 0, "maximum": 1000})
    reference = ReferenceRecognizer(grammar.ir)
    (name,) = [t.name for t in grammar.ir.terminals if t.automaton is not None]
    matcher = reference.gens[name].viable
    assert matcher.fullmatch("98", partial=True) and not matcher.fullmatch("98")  # 988 = 13 * 76
    assert not matcher.fullmatch("99", partial=True)  # 990..999 hold no multiple, 99x.. are over 1000
    assert matcher.fullmatch("988") and not matcher.fullmatch("1001", partial=True)  # 13 * 77, over the maximum
    for n in range(0, 1100, 7):
        assert reference.accepts(str(n)) == grammar.accepts(str(n)) == (n % 13 == 0 and n <= 1000)


def _small_vocab() -> pda.Vocabulary:
    pieces = {bytes([b]) for b in b"0123456789-.[], e"}
    rng = random.Random(5)
    while len(pieces) < 160:
        pieces.add("".join(rng.choice("0123456789") for _ in range(rng.randint(2, 4))).encode())
    pieces |= {b"-9", b"0.", b".0", b"18,", b"[-", b", ", b"],", b"99]", b"0]"}
    tokens: list[bytes | None] = sorted(pieces)
    tokens.append(None)
    return pda.Vocabulary.from_tokens(tokens, eos_ids=[len(tokens) - 1])


@pytest.mark.parametrize("schema", [
    {"type": "array", "items": {"type": "integer", "multipleOf": 9, "minimum": -50}},
    {"type": "array", "items": {"type": "number", "multipleOf": 0.3, "maximum": 100}},
], ids=["int9", "num0.3"])
def test_fast_mask_equals_reference_with_an_automaton_terminal(schema: dict[str, Any]) -> None:
    grammar = pda.Grammar.from_json_schema(schema, exact=True)
    assert any(t.automaton is not None for t in grammar.ir.terminals)
    compiled = pda.compile(grammar, _small_vocab())
    rng = random.Random(17)
    states = 0
    while states < 300:
        for node, q, _ in random_walk_states(compiled, rng, max_steps=30):
            assert mask_mismatches(compiled, node, q) == [], states
            states += 1
