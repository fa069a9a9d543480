"""Malformed input at the public API raises only pda's errors, and never hangs.

Every front end (`pda.Grammar.from_lark/from_gbnf/from_regex/from_choices/
from_json_schema`), membership (`accepts`, `accepts_prefix`, `check`),
`pda.Vocabulary.from_tokens`, `pda.compile` and every `pda.Matcher` method get
random garbage, mutations of valid input and deep nesting. The required
behaviour: the call returns, or raises a `pda.PdaError` subclass; where the
argument itself has the wrong Python type or value (a float token id, a bitmask
of the wrong dtype), `TypeError` or `ValueError` is also fine. Anything else
(RecursionError, IndexError, AttributeError, OverflowError...) is a bug, and so
is a call that takes more than `EXAMPLE_SECONDS`.

The examples are derandomized, so CI sees the same ones every run; the
`@pytest.mark.slow` twins (`pytest --long`) try many more.
"""

from __future__ import annotations

import json
import math
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pda
from pda.vocab.vocabulary import VocabularyError

EXAMPLE_SECONDS = 10.0
"""Longest one call may take before the example counts as a hang."""

GRAMMARS = Path(pda.__file__).parent / "grammars"
JSON_LARK = (GRAMMARS / "json.lark").read_text()

SMALL_LARK = [
    JSON_LARK,
    'start: "a" b*\nb: "b" | "c" start\n',
    "start: WORD (\",\" WORD)*\nWORD: /[a-z]+/\n%ignore \" \"\n",
    "?start: sum\n?sum: product | sum \"+\" product\n?product: NUMBER | \"(\" sum \")\"\n"
    "%import common.NUMBER\n%import common.WS\n%ignore WS\n",
    'start: x{1,3} "!"\nx: "x" | "y"\n',
]
SMALL_GBNF = [
    'root ::= "a" b*\nb ::= [0-9] | "(" root ")"\n',
    'root ::= item ("," item)*\nitem ::= [a-z]+ | "\\"" [^"]* "\\""\n',
    'root ::= ws "x"{2,4} ws\nws ::= [ \\t]*\n',
]
SMALL_REGEXES = [r"[a-z]+@[a-z]+\.com", r"(?:ab|cd)*e?", r"\d{2,4}-\w+", r"(a|b)*c[^x]{0,3}", "é+ü?"]
VALID_SCHEMAS: list[Any] = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                      "b": {"type": "array", "items": {"type": "string", "maxLength": 3}}},
     "required": ["a"]},
    {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "number", "multipleOf": 0.5}]},
    {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}, "maxItems": 2}}, "$ref": "#/$defs/n"},
    {"type": "array", "prefixItems": [{"const": 1}], "items": {"enum": ["x", None]}, "minItems": 1},
    {"allOf": [{"type": "object", "minProperties": 1}, {"not": {"required": ["z"]}}]},
    {"type": "string", "format": "date", "minLength": 2},
    {"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}},
]
SCHEMA_KEYWORDS = [
    "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "items", "prefixItems", "additionalItems", "minItems",
    "maxItems", "contains", "minContains", "maxContains", "uniqueItems", "minLength", "maxLength", "pattern",
    "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf", "oneOf",
    "allOf", "not", "if", "then", "else", "$ref", "$defs", "definitions", "dependentRequired",
    "dependentSchemas", "dependencies", "nullable", "$id", "$anchor", "$schema",
]

PDA_ONLY: tuple[type[BaseException], ...] = (pda.PdaError,)
AT_BOUNDARY: tuple[type[BaseException], ...] = (pda.PdaError, TypeError, ValueError)


def fuzz(max_examples: int) -> Callable[[Any], Any]:
    """Deterministic hypothesis settings: the same examples on every run, no per-example deadline
    (`guarded` bounds each call instead)."""
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


class Hang(BaseException):
    """Raised by the alarm inside a call that ran too long (a BaseException, so no
    `except Exception` in the code under test swallows it)."""


def guarded(call: Callable[[], Any], allowed: tuple[type[BaseException], ...], what: object) -> Any:
    """Run `call`; fail the example on an exception outside `allowed` or after EXAMPLE_SECONDS.
    Returns the call's result, or None when it raised an allowed error."""
    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # Another timer (pytest-timeout's signal method) is put back afterwards, less the time spent.
    outer, _ = signal.setitimer(signal.ITIMER_REAL, EXAMPLE_SECONDS)
    started = time.monotonic()
    try:
        return call()
    except Hang:
        raise AssertionError(f"took more than {EXAMPLE_SECONDS} s: {what!r}"[:2000]) from None
    except allowed:
        return None
    except Exception as exc:
        raise AssertionError(f"raw {type(exc).__name__} ({exc})"[:500] + f" from {what!r}"[:2000]) from exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))


def test_error_types_are_pda_errors() -> None:
    for error in (pda.GrammarError, pda.RegexError, pda.ParseError, pda.TokenRejected, pda.LimitExceeded,
                  VocabularyError):
        assert issubclass(error, pda.PdaError), error


# ---------------------------------------------------------------- vocabulary and compiled grammars

TOKENS: list[bytes | None] = [bytes([b]) for b in range(32, 127)] + [
    b"\n", b" ", b'{"', b'":', b'",', b"true", b"null", b"false", b"12", b"ab", b"\xc3\xa9", b"\xc3", b"\xa9",
    None,
]
EOS = len(TOKENS) - 1


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Compiled indexes go to a private folder, not the user's cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PDA_CACHE_DIR", str(tmp_path_factory.mktemp("pda-cache")))
        yield


_vocab: list[pda.Vocabulary] = []
_compiled: dict[str, pda.CompiledGrammar] = {}


def small_vocab() -> pda.Vocabulary:
    if not _vocab:
        _vocab.append(pda.Vocabulary.from_tokens(TOKENS, eos_ids=[EOS]))
    return _vocab[0]


def compiled(name: str) -> pda.CompiledGrammar:
    """json.lark or a JSON Schema grammar, compiled once for the small vocabulary."""
    if name not in _compiled:
        grammar = pda.Grammar.load("json") if name == "json" else pda.Grammar.from_json_schema(VALID_SCHEMAS[0])
        _compiled[name] = pda.compile(grammar, small_vocab())
    return _compiled[name]


def exercise(grammar: pda.Grammar, texts: list[str], what: object) -> None:
    """Membership on a few texts, then compile with the small vocabulary and take a few steps."""
    def verdict(prefix: bool) -> bool | None:
        """`check`'s verdict (None when it raised another pda error): `accepts` must agree with it."""
        try:
            grammar.check(text, prefix=prefix)
        except pda.ParseError:
            return False
        return True

    for text in texts:
        whole = guarded(lambda: grammar.accepts(text), PDA_ONLY, (what, text))
        prefix = guarded(lambda: grammar.accepts_prefix(text), PDA_ONLY, (what, text))
        for verdict_of_accepts, is_prefix in ((whole, False), (prefix, True)):
            checked = guarded(lambda: verdict(is_prefix), PDA_ONLY, (what, text))
            if verdict_of_accepts is not None and checked is not None:
                assert verdict_of_accepts == checked, (what, text, is_prefix)

    def steps() -> None:
        m = pda.Matcher(pda.compile(grammar, small_vocab()))
        for _ in range(3):
            ids = m.allowed_token_ids()
            if len(ids) == 0 or m.is_terminated():
                break
            m.accept_token(int(ids[len(ids) // 2]))
            m.forced_bytes()
            m.can_end()

    guarded(steps, PDA_ONLY, what)


# ---------------------------------------------------------------- grammar texts

LARK_ALPHABET = st.sampled_from(list('abxyzAXYZ019_ :|?*+()[]{}"/\\.,!~%-^$\n\t') + ["->", "%import", "%ignore",
                                                                                         "common.", "start", "é"])
GBNF_ALPHABET = st.sampled_from(list('abxroot:=|?*+()[]{}"\\.,^-\n\t 0129') + ["::=", "root", "[^", "\\x", "\\u"])
REGEX_ALPHABET = st.sampled_from(list("abz09.*+?|()[]{}^$\\-,:=!<>dwsDWSbBpPnu\t é\U0001f600") + ["(?", "\\p{L}",
                                                                                                   "\\x", "{2,1}"])


@st.composite
def mutated(draw: st.DrawFn, sources: list[str], alphabet: st.SearchStrategy[str]) -> str:
    """A valid text with a few characters deleted, a slice duplicated, or new characters inserted."""
    text = draw(st.sampled_from(sources))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        op = draw(st.sampled_from(["delete", "duplicate", "insert"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i] + "".join(draw(st.lists(alphabet, max_size=4))) + text[i:]
    return text


def nested(opening: str, inner: str, closing: str) -> st.SearchStrategy[str]:
    """`inner` wrapped in `opening`/`closing` from a few to thousands of times."""
    return st.sampled_from([3, 50, 200, 1000, 5000]).map(lambda n: opening * n + inner + closing * n)


lark_texts = st.one_of(
    st.lists(LARK_ALPHABET, max_size=40).map("".join),
    st.lists(LARK_ALPHABET, max_size=30).map(lambda cs: "start: " + "".join(cs)),
    mutated(SMALL_LARK, LARK_ALPHABET),
    nested("(", '"a"', ")").map(lambda body: "start: " + body + "\n"),
    nested("[", '"a"', "]").map(lambda body: "start: " + body + "\n"),
    nested("(", '"a"', ")*").map(lambda body: "start: " + body + "\n"),
    st.sampled_from([30, 300, 1000]).map(lambda n: "".join(f"r{i}: r{i + 1}\n" for i in range(n)) + f"r{n}: \"x\"\n"
                                         + "start: r0\n"),
    st.sampled_from(['start: "\\ud800"\n', "start: /\\p{L}/\n", "%import nothing.HERE\nstart: HERE\n",
                     "%import common (NUMBER\n", 'start: "a"\n%ignore "\n', "start: /(?<=a)b/\n",
                     'start: "a"{5000}\n', "start: /a{3000}/\n", 'start: "a"{3,1}\n']),
)
gbnf_texts = st.one_of(
    st.lists(GBNF_ALPHABET, max_size=40).map("".join),
    mutated(SMALL_GBNF, GBNF_ALPHABET),
    nested("(", '"a"', ")").map(lambda body: "root ::= " + body + "\n"),
    nested("(", '"a"', ")?").map(lambda body: "root ::= " + body + "\n"),
    st.sampled_from(['root ::= "\\ud800"\n', "root ::= [\\U0010ffff-\\x00]\n", "root ::= x\n",
                     'root ::= "a"{9999999}\n', "root ::= [^]\n", "root ::= \n"]),
)
regex_texts = st.one_of(
    st.lists(REGEX_ALPHABET, max_size=25).map("".join),
    mutated(SMALL_REGEXES, REGEX_ALPHABET),
    nested("(", "a", ")"),
    nested("(?:", "a", ")*"),
    nested("[", "a", "]"),
    st.sampled_from(["", "()", "|", "a{9999}", "a{1,2}{3}", "(?P<x>a)(?P=x)", "[z-a]", "\\", "(?i)a",
                     "\\p{L}+", "[[:alpha:]]", "\\ud800", "a**", "(?=a)", "\x00"]),
)


def _texts_for(grammar_texts: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, list[str]]]:
    return st.tuples(grammar_texts, st.lists(st.text(alphabet="ab\"(){}[]1,: xé", max_size=12), max_size=3))


def check_lark(case: tuple[str, list[str]]) -> None:
    text, probes = case
    grammar = guarded(lambda: pda.Grammar.from_lark(text), PDA_ONLY, text)
    if grammar is not None:
        exercise(grammar, probes, text)


def check_gbnf(case: tuple[str, list[str]]) -> None:
    text, probes = case
    grammar = guarded(lambda: pda.Grammar.from_gbnf(text), PDA_ONLY, text)
    if grammar is not None:
        exercise(grammar, probes, text)


def check_regex(case: tuple[str, list[str]]) -> None:
    text, probes = case
    grammar = guarded(lambda: pda.Grammar.from_regex(text), PDA_ONLY, text)
    if grammar is not None:
        exercise(grammar, probes, text)


test_lark_text = fuzz(300)(given(_texts_for(lark_texts))(check_lark))
test_lark_text_long = pytest.mark.slow(fuzz(3000)(given(_texts_for(lark_texts))(check_lark)))
test_gbnf_text = fuzz(200)(given(_texts_for(gbnf_texts))(check_gbnf))
test_gbnf_text_long = pytest.mark.slow(fuzz(2000)(given(_texts_for(gbnf_texts))(check_gbnf)))
test_regex_text = fuzz(300)(given(_texts_for(regex_texts))(check_regex))
test_regex_text_long = pytest.mark.slow(fuzz(3000)(given(_texts_for(regex_texts))(check_regex)))

# Choices: a list of strings is the API; anything else is a wrong argument.
choice_items = st.one_of(st.text(max_size=6), st.just(""), st.integers(), st.none(), st.binary(max_size=3),
                         st.floats(), st.text(alphabet="\ud800\udfffa", max_size=3))
choice_lists = st.one_of(
    st.lists(st.text(max_size=8), max_size=20),
    st.lists(choice_items, max_size=6),
    st.lists(st.sampled_from(["a", "ab", "a", ""]), max_size=8),
    st.sampled_from([[], "abc", None, 5, ("a", "b"), {"a": 1}, ["x" * 5000], [str(i) for i in range(3000)],
                     ["a\ud800"], ["\udfff", "b"]]),
)


def check_choices(case: tuple[Any, list[str]]) -> None:
    choices, probes = case
    grammar = guarded(lambda: pda.Grammar.from_choices(choices), AT_BOUNDARY, choices)
    if grammar is not None:
        exercise(grammar, probes, choices)


test_choices = fuzz(200)(given(st.tuples(choice_lists, st.lists(st.text(max_size=5), max_size=3)))(check_choices))
test_choices_long = pytest.mark.slow(
    fuzz(2000)(given(st.tuples(choice_lists, st.lists(st.text(max_size=5), max_size=3)))(check_choices)))


# ---------------------------------------------------------------- JSON Schemas

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.sampled_from([10**400, -1, 0]),
                         st.floats(), st.text(max_size=5))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.one_of(st.sampled_from(SCHEMA_KEYWORDS), st.text(max_size=3)), inner, max_size=4),
    max_leaves=12,
)
bad_values = st.one_of(
    st.sampled_from([-1, -3, 0, 1.5, -0.5, math.nan, math.inf, -math.inf, 10**28, 10**300, 10**5000, 2**64 + 0.0,
                     "x", "", True, False, None, [], [1], {}, {"x": 1}, [[]], "integer", ["string", 5]]),
    json_values,
)


def _dict_paths(schema: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every object inside a schema document (where a keyword can be replaced)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(schema, dict):
        out.append(path)
        for k, v in schema.items():
            out += _dict_paths(v, path + (k,))
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            out += _dict_paths(v, path + (i,))
    return out


@st.composite
def mutated_schemas(draw: st.DrawFn) -> Any:
    """A valid schema with one or two keywords set to a value of the wrong type or range."""
    schema = json.loads(json.dumps(draw(st.sampled_from(VALID_SCHEMAS))))
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(_dict_paths(schema)))
        node = schema
        for p in path:
            node = node[p]
        node[draw(st.sampled_from(SCHEMA_KEYWORDS))] = draw(bad_values)
    return schema


@st.composite
def deep_schemas(draw: st.DrawFn) -> Any:
    """A schema nested `depth` levels by one keyword (or a chain of `$ref`s that deep)."""
    depth = draw(st.sampled_from([5, 40, 63, 64, 65, 100, 300, 3000]))
    how = draw(st.sampled_from(["items", "properties", "anyOf", "allOf", "not", "ref", "const", "additional"]))
    if how == "ref":
        defs = {f"d{i}": {"type": "array", "items": {"$ref": f"#/$defs/d{i + 1}"}} for i in range(depth)}
        defs[f"d{depth}"] = {"type": "null"}
        return {"$defs": defs, "$ref": "#/$defs/d0"}
    schema: Any = {"type": "integer"}
    value: Any = 1
    for _ in range(depth):
        if how == "items":
            schema = {"type": "array", "items": schema}
        elif how == "properties":
            schema = {"type": "object", "properties": {"a": schema}}
        elif how == "anyOf":
            schema = {"anyOf": [schema, {"type": "null"}]}
        elif how == "allOf":
            schema = {"allOf": [schema]}
        elif how == "not":
            schema = {"not": schema} if depth <= 5 else {"type": "array", "items": {"not": {"not": schema}}}
        elif how == "additional":
            schema = {"additionalProperties": schema}
        value = [value]
    return {"const": value} if how == "const" else schema


schemas = st.one_of(json_values, mutated_schemas(), deep_schemas(),
                    st.sampled_from(VALID_SCHEMAS), json_values.map(lambda v: json.dumps(v)))


def check_schema(case: tuple[Any, Any, str]) -> None:
    schema, instance, whitespace = case
    grammar = guarded(lambda: pda.Grammar.from_json_schema(schema, whitespace=whitespace, on_unsupported="relax"),
                      PDA_ONLY, schema)
    if grammar is not None:
        text = guarded(lambda: json.dumps(instance), (ValueError, TypeError), instance) or "null"
        exercise(grammar, [text], schema)


_schema_cases = st.tuples(schemas, json_values, st.sampled_from(["compact", "flexible"]))
test_json_schema = fuzz(400)(given(_schema_cases)(check_schema))
test_json_schema_long = pytest.mark.slow(fuzz(3000)(given(_schema_cases)(check_schema)))


# ---------------------------------------------------------------- vocabularies

token_items = st.one_of(st.binary(max_size=4), st.text(max_size=3), st.none(), st.integers(-2, 300), st.floats(),
                        st.just(bytearray(b"ab")), st.lists(st.integers(0, 255), max_size=2))
id_values = st.one_of(st.integers(-5, 40), st.integers(), st.floats(), st.booleans(), st.text(max_size=2),
                      st.none(), st.integers(0, 40).map(np.int64), st.integers(0, 40).map(np.uint8),
                      st.just(2**70))


def check_from_tokens(case: tuple[Any, Any, Any]) -> None:
    tokens, eos_ids, special_ids = case

    def build() -> None:
        vocab = pda.Vocabulary.from_tokens(tokens, eos_ids=eos_ids, special_ids=special_ids)
        m = pda.Matcher(pda.compile(pda.Grammar.from_regex("[ab]{1,3}"), vocab))
        m.allowed_token_ids()
        m.fill_bitmask(np.zeros((1, (vocab.size + 31) // 32), dtype=np.int32))

    guarded(build, AT_BOUNDARY, case)


_vocab_cases = st.tuples(
    st.one_of(st.lists(token_items, max_size=8), st.lists(st.binary(min_size=1, max_size=2), max_size=40),
              st.sampled_from([[], [None], [b"a", b"a"], [b""], b"ab", "ab", None, 5, [b"a"] * 300])),
    st.one_of(st.lists(id_values, max_size=3), id_values, st.sampled_from([(), None, "0", [0, 0]])),
    st.one_of(st.lists(id_values, max_size=2), st.sampled_from([(), None])),
)
test_from_tokens = fuzz(300)(given(_vocab_cases)(check_from_tokens))
test_from_tokens_long = pytest.mark.slow(fuzz(3000)(given(_vocab_cases)(check_from_tokens)))


# ---------------------------------------------------------------- compile and the Matcher

V = len(TOKENS)
WORDS = (V + 31) // 32
bitmasks = st.one_of(
    st.sampled_from([np.int32, np.uint32, np.int64, np.float32, np.bool_, np.int8, np.uint64]).flatmap(
        lambda dtype: st.sampled_from([(1, WORDS), (2, WORDS), (WORDS,), (1, WORDS - 1), (1, WORDS + 3), (0, WORDS),
                                       (1, 1, WORDS), (3, 0), ()]).map(lambda shape: np.zeros(shape, dtype=dtype))),
    st.just(np.zeros((2, WORDS * 2), dtype=np.int32)[:, ::2]),
    st.just(np.zeros((2, WORDS), dtype=np.int32).T),
    st.sampled_from([None, [[0] * WORDS], b"\x00" * 16, 5, "mask"]),
)


def _readonly() -> np.ndarray:
    mask = np.zeros((1, WORDS), dtype=np.int32)
    mask.flags.writeable = False
    return mask


operations = st.one_of(
    st.tuples(st.just("accept_token"), id_values),
    st.tuples(st.just("accept_token"), st.integers(0, V - 1)),
    st.tuples(st.just("is_allowed"), id_values),
    st.tuples(st.just("accept_bytes"), st.one_of(st.binary(max_size=4), st.text(max_size=3), st.none(),
                                                 st.integers(), st.just(bytearray(b"1")), st.just(memoryview(b"[")),
                                                 st.just([1, 2]))),
    st.tuples(st.just("fill_bitmask"), st.tuples(bitmasks, st.one_of(id_values, st.just(0), st.just(1)))),
    st.tuples(st.just("fill_readonly"), st.just(0)),
    st.tuples(st.just("rollback"), st.one_of(id_values, st.integers(0, 3))),
    st.tuples(st.just("forced_bytes"), st.none()),
    st.tuples(st.just("can_end"), st.none()),
    st.tuples(st.just("allowed_token_ids"), st.none()),
    st.tuples(st.just("copy"), st.none()),
    st.tuples(st.just("reset"), st.none()),
)


def check_matcher(case: tuple[str, list[tuple[str, Any]]]) -> None:
    name, ops = case
    m = pda.Matcher(compiled(name))
    for op, arg in ops:
        if op == "fill_bitmask":
            call = (lambda a=arg: m.fill_bitmask(a[0], a[1]))
        elif op == "fill_readonly":
            call = (lambda: m.fill_bitmask(_readonly(), 0))
        elif op in ("accept_token", "is_allowed", "accept_bytes", "rollback"):
            call = (lambda op=op, a=arg: getattr(m, op)(a))
        else:
            call = getattr(m, op)
        guarded(call, AT_BOUNDARY, (name, ops, op, arg))


_matcher_cases = st.tuples(st.sampled_from(["json", "schema"]), st.lists(operations, max_size=12))
test_matcher = fuzz(300)(given(_matcher_cases)(check_matcher))
test_matcher_long = pytest.mark.slow(fuzz(4000)(given(_matcher_cases)(check_matcher)))


def check_compile(case: tuple[Any, Any, Any]) -> None:
    grammar, vocab, width = case
    grammar = {"json": pda.Grammar.load("json"), "regex": pda.Grammar.from_regex("ab*")}.get(grammar, grammar)
    vocab = small_vocab() if vocab == "vocab" else vocab
    guarded(lambda: pda.compile(grammar, vocab, mask_width=width), AT_BOUNDARY, case)
    guarded(lambda: pda.Matcher(grammar), AT_BOUNDARY, case)


_compile_cases = st.tuples(st.sampled_from(["json", "regex", None, "start: x", 5]),
                           st.sampled_from(["vocab", None, [b"a"], 3]),
                           st.one_of(st.none(), id_values, st.sampled_from([V, V + 1, V - 1, 0, -32, 2**40, 32.0])))
test_compile_arguments = fuzz(100)(given(_compile_cases)(check_compile))
