"""Structural tags (`pda.Grammar.from_structural_tag`) and the free-text terminal under them.

The free text's automaton is checked against its definition on random stop strings; the
formats against hand-written cases and malformed specs; and, on the real Qwen2
vocabulary, random constrained walks whose finished texts must decompose as each spec
says (JSON segments validated by `jsonschema`), with masks equal to the token-by-token
reference at the states the walks pass. `--long` runs the counts of the issue's Show list.
"""

from __future__ import annotations

import json
import random
import re

import jsonschema
import numpy as np
import pytest

import pda
from pda.grammar.free_text import free_text_automaton
from pda.grammar.ir import GrammarIR, Rule, TerminalAutomaton, TerminalDef
from pda.reference import mask_mismatches

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
           "required": ["city"], "additionalProperties": False}
SEARCH = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}},
          "required": ["q", "n"], "additionalProperties": False}
NOOP = {"type": "object", "properties": {}, "additionalProperties": False}
TOOLS = {"get_weather": WEATHER, "search": SEARCH, "noop": NOOP}


def _tool_tags(begin: str = "<function={}>", end: str = "</function>") -> list[dict]:
    return [{"begin": begin.format(name), "content": {"type": "json_schema", "json_schema": schema}, "end": end}
            for name, schema in TOOLS.items()]


LABELS = [f"label_{i:04d}" for i in range(1000)]
HERMES = '<tool_call>{{"name": "{}", "arguments": ' 

SPECS = {
    # three tools, called anywhere in free text
    "tools": {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<function="],
                                                   "tags": _tool_tags()}},
    # parallel calls: one or more, separated by a newline, nothing else
    "parallel": {"type": "structural_tag", "format": {"type": "tags_with_separator", "separator": "\n",
                                                      "at_least_one": True,
                                                      "tags": _tool_tags(HERMES, "}</tool_call>")}},
    # think, then one of 1,000 labels
    "think": {"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>\n"},
        {"type": "or", "elements": [{"type": "const_string", "value": v} for v in LABELS]}]}},
    # a triggered tag whose body is a regex
    "regex": {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<date>"], "tags": [
        {"begin": "<date>", "content": {"type": "regex", "pattern": r"\d{4}-\d{2}-\d{2}"}, "end": "</date>"}]}},
    # free text that must not call a tool
    "no_call": {"type": "structural_tag", "format": {"type": "any_text", "excludes": ["<tool_call>", "<function="]}},
}


def _grammar(automaton: TerminalAutomaton) -> pda.Grammar:
    terminal = TerminalDef("T", automaton.describe(), automaton=automaton)
    return pda.Grammar(GrammarIR(terminals=(terminal,), rules=(Rule("start", ("T",)),), start="start"))


def test_free_text_automaton_is_its_definition() -> None:
    """Text with no stop string (non-empty), or text whose first stop string ends it and is `until`."""
    rng = random.Random(0)
    checked = 0
    for _ in range(150):
        stops = sorted({"".join(rng.choice("ab<>") for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 3))})
        until = rng.choice([None, *stops])
        try:
            grammar = _grammar(free_text_automaton(stops, until=until))
        except pda.GrammarError:  # `until` always preceded by another stop string (e.g. "a" before "<a")
            assert until is not None and any(s != until and s in until for s in stops)
            continue
        for _ in range(40):
            text = "".join(rng.choice("ab<>c\n") for _ in range(rng.randint(0, 9)))
            if until is not None and rng.random() < 0.5:
                text += until
            ends = [i + len(s) for s in stops for i in range(len(text)) if text.startswith(s, i)]
            if until is None:
                want = bool(text) and not ends
            else:
                want = bool(ends) and min(ends) == len(text) and text.endswith(until)
            assert grammar.accepts(text) == want, (stops, until, text)
            checked += 1
    assert checked > 3000


def test_triggered_tags() -> None:
    g = pda.Grammar.from_structural_tag(SPECS["tools"])
    good = ["", "hello", 'hi <function=get_weather>{"city": "Paris"}</function> ok', "<function=noop>{}</function>",
            'a <function=noop>{}</function><function=search>{"q":"x","n":3}</function>b', "a <function",
            "<functio", 'x <function=get_weather>{"city":"</function>"}</function>']
    bad = ["x <function=bad>{}</function>", 'x <function=get_weather>{"town": 1}</function>',
           "<function=noop>{}", "<function=noop>{}</function", "<function=noop> {} </function> <function=",
           "<function=noop>{}</function><function=nope>"]
    assert [t for t in good if not g.accepts(t)] == []
    assert [t for t in bad if g.accepts(t)] == []
    assert g.accepts_prefix('x <function=get_weather>{"ci')


def test_at_least_one_and_stop_after_first() -> None:
    base = SPECS["tools"]["format"]
    one = pda.Grammar.from_structural_tag({**base, "at_least_one": True})
    first = pda.Grammar.from_structural_tag({**base, "stop_after_first": True})
    both = pda.Grammar.from_structural_tag({**base, "at_least_one": True, "stop_after_first": True})
    call = "<function=noop>{}</function>"
    assert not one.accepts("no call") and one.accepts(f"a {call} b {call}") and one.accepts(call)
    assert first.accepts("no call") and first.accepts(f"a {call}") and not first.accepts(f"a {call} b")
    assert not both.accepts("text") and both.accepts(f"a {call}") and not both.accepts(f"{call}{call}")


def test_think_then_answer_and_tags_with_free_text() -> None:
    g = pda.Grammar.from_structural_tag(SPECS["think"])
    assert g.accepts("<think>Let me see: </think> is not\nit.</think>\nlabel_0042")
    assert g.accepts("<think></think>\nlabel_0999")
    assert not g.accepts("<think>x</think>\nlabel_1000")
    assert not g.accepts("<think>x</think>label_0001")
    seq = pda.Grammar.from_structural_tag({"type": "sequence", "elements": [
        {"type": "any_text"}, {"type": "const_string", "value": "ANSWER: "}, {"type": "regex", "pattern": "yes|no"}]})
    assert seq.accepts("reasoning... ANSWER: yes") and seq.accepts("ANSWER: no")
    assert not seq.accepts("a ANSWER: b ANSWER: yes")  # the text ends at the first "ANSWER: "


def test_tag_ends_and_sub_grammars() -> None:
    g = pda.Grammar.from_structural_tag({"type": "tag", "begin": "<a>", "end": ["</a>", "</b>"],
                                         "content": {"type": "grammar", "syntax": "lark", "grammar":
                                                     'start: "x" ("," "x")*\n%ignore " "'}})
    assert g.accepts("<a>x , x</a>") and g.accepts("<a> x </b>")
    assert not g.accepts(" <a>x</a>")  # the sub-grammar's %ignore stays inside it
    gbnf = pda.Grammar.from_structural_tag({"type": "sequence", "elements": [
        {"type": "const_string", "value": "n="},
        {"type": "grammar", "grammar": 'root ::= [0-9]+ ("." [0-9]+)?'}]})
    assert gbnf.accepts("n=3.14") and not gbnf.accepts("n=3.")


def test_repeat_optional_star_plus() -> None:
    item = {"type": "const_string", "value": "ab"}
    assert pda.Grammar.from_structural_tag({"type": "repeat", "min": 2, "max": 3, "content": item}).accepts("abab")
    r = pda.Grammar.from_structural_tag({"type": "repeat", "min": 2, "max": 3, "content": item})
    assert [r.accepts("ab" * k) for k in range(5)] == [False, False, True, True, False]
    s = pda.Grammar.from_structural_tag({"type": "star", "content": item})
    p = pda.Grammar.from_structural_tag({"type": "plus", "content": item})
    o = pda.Grammar.from_structural_tag({"type": "optional", "content": item})
    assert [s.accepts("ab" * k) for k in range(3)] == [True, True, True]
    assert [p.accepts("ab" * k) for k in range(3)] == [False, True, True]
    assert [o.accepts("ab" * k) for k in range(3)] == [True, True, False]


def test_legacy_form() -> None:
    g = pda.Grammar.from_structural_tag(
        {"structures": [{"begin": "<tool_call>", "schema": WEATHER, "end": "</tool_call>"}], "triggers": ["<tool_call>"]}
    )
    assert g.accepts('Sure. <tool_call>{"city":"Oslo"}</tool_call>')
    assert not g.accepts("<tool_call>{}</tool_call>")
    assert pda.Grammar.from_structural_tag(json.dumps(SPECS["regex"])).accepts("on <date>2024-01-02</date>.")


@pytest.mark.parametrize(("spec", "where"), [
    ({"type": "nope"}, "$.type"),
    ({"type": "tag", "begin": "a", "end": "b"}, "$: tag needs 'content'"),
    ({"type": "any_text", "max_tokens": 5}, "$.max_tokens"),
    ({"type": "token", "token": 5}, "$.type"),
    ({"type": "triggered_tags", "triggers": ["<a"], "tags": [
        {"begin": "<b>", "content": {"type": "const_string", "value": "x"}, "end": "</b>"}]}, "$.tags[0].begin"),
    ({"type": "sequence", "elements": [{"type": "any_text"}, {"type": "regex", "pattern": "a"}]}, "$.elements[0]"),
    (5, "$"),
    ({"type": "const_string", "value": 3}, "$.value"),
    ({"type": "json_schema", "json_schema": {"type": 5}}, "$.json_schema"),
    ({"type": "json_schema", "json_schema": {}, "style": "qwen_xml"}, "$.style"),
    ({"type": "regex", "pattern": "(?<=a)b"}, "$.pattern"),
    ({"type": "sequence", "elements": [{"type": "const_string", "value": "a"}], "extra": 1}, "$.extra"),
    ({"type": "repeat", "min": 3, "max": 2, "content": {"type": "const_string", "value": "a"}}, "$"),
    ({"structures": [{"begin": "<a>"}], "triggers": ["<a>"]}, "$.structures[0]"),
    ("{not json", "not valid JSON"),
])
def test_bad_specs_name_the_field(spec, where: str) -> None:
    with pytest.raises(pda.GrammarError) as info:
        pda.Grammar.from_structural_tag(spec)
    assert where in str(info.value)


# ---------------------------------------------------------------------- Qwen2 walks


@pytest.fixture(scope="module")
def qwen() -> pda.Vocabulary:
    from pda.demo.qwen import load_qwen2_tokenizer

    return pda.Vocabulary.from_hf(load_qwen2_tokenizer())


def _decompose(name: str, text: str) -> bool:
    """Whether `text` is what spec `name` describes (an independent reading: `re`, `json`, `jsonschema`)."""
    if name == "no_call":
        return "<tool_call>" not in text and "<function=" not in text
    if name == "think":
        m = re.fullmatch(r"<think>(.*?)</think>\n(.*)", text, re.S)
        return bool(m) and m.group(2) in LABELS
    if name == "parallel":
        return bool(text) and all(_hermes_call(call) for call in text.split("</tool_call>\n"))
    trigger, pattern = {"tools": ("<function=", None), "regex": ("<date>", r"\d{4}-\d{2}-\d{2}")}[name]
    at = 0
    while True:
        i = text.find(trigger, at)
        if i < 0:
            return True
        if name == "regex":
            m = re.compile(r"<date>(\d{4}-\d{2}-\d{2})</date>").match(text, i)
            if not m:
                return False
            at = m.end()
            continue
        m = re.compile(r"<function=(\w+)>").match(text, i)
        if not m or m.group(1) not in TOOLS:
            return False
        try:
            value, end = json.JSONDecoder().raw_decode(text, _skip_ws(text, m.end()))
            jsonschema.validate(value, TOOLS[m.group(1)])
        except (ValueError, jsonschema.ValidationError):
            return False
        end = _skip_ws(text, end)
        if not text.startswith("</function>", end):
            return False
        at = end + len("</function>")


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _hermes_call(text: str) -> bool:
    """`<tool_call>{"name": NAME, "arguments": ARGS}</tool_call>` (the last one's end cut off by the split
    or not) with NAME a tool and ARGS valid for it."""
    text = text.removesuffix("</tool_call>")
    m = re.match(r'<tool_call>\{"name": "(\w+)", "arguments": ', text)
    if not m or m.group(1) not in TOOLS:
        return False
    try:
        call = json.loads(text[len("<tool_call>"):])
        jsonschema.validate(call["arguments"], TOOLS[m.group(1)])
    except (ValueError, jsonschema.ValidationError):
        return False
    return set(call) == {"name", "arguments"}


def _walk(compiled: pda.CompiledGrammar, rng: random.Random, pieces: list[bytes], by_bytes: dict[bytes, int],
          check: int, nprng: np.random.Generator) -> tuple[bytes | None, int]:
    """One random constrained walk. Each step takes a random allowed token, or goes on spelling a
    piece of the spec (a literal, a valid JSON argument, a label) with the longest allowed token
    that continues it, so that tags begin and close; the text ends where it can, with some
    probability. The masks of the first `check` states are compared with the reference.
    Returns the text (None when cut at the step limit) and the states checked."""
    node, q = compiled.initial_state()
    vocab = compiled.vocab
    out = bytearray()
    pending = b""
    checked = 0
    for step in range(200):
        mask = compiled.text_mask(node, q)
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")
        if step < check:
            allowed = np.flatnonzero(bits)
            sample = np.unique(np.concatenate([nprng.integers(0, vocab.size, 1500), allowed[:3000]])).astype(np.int64)
            assert mask_mismatches(compiled, node, q, sample) == []
            checked += 1
        if compiled.can_end(node, q) and (rng.random() < 0.1 or not bits.any()):
            return bytes(out), checked
        if not pending and rng.random() < 0.3:
            pending = rng.choice(pieces)
        token = next((by_bytes[pending[:k]] for k in range(len(pending), 0, -1)
                      if pending[:k] in by_bytes and bits[by_bytes[pending[:k]]]), None)
        if token is None:
            pending = b""
            allowed = np.flatnonzero(bits)
            assert len(allowed), f"a dead end after {bytes(out)!r}"
            token = int(allowed[rng.randrange(len(allowed))])
        else:
            pending = pending[len(vocab.tokens[token]):]
        node, q = compiled.scanner.feed(node, q, vocab.tokens[token])
        out += vocab.tokens[token]
    return None, checked


def _pieces(spec: dict) -> list[bytes]:
    """Strings a walk spells whole: the spec's literals, valid tool arguments, a few labels."""
    found = re.findall(r'"(?:begin|end|value|separator|triggers)": (?:\[)?"((?:[^"\\]|\\.)*)"', json.dumps(spec))
    pieces = {json.loads(f'"{p}"') for p in found}
    pieces = {p for p in pieces if not p.startswith("label_")}  # a thousand labels would drown the rest
    pieces |= {'{"city": "Paris"}', '{"q":"cats","n":3}', "{}", "2024-01-02", "label_0042", "label_0999"}
    return sorted(p.encode() for p in pieces)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_qwen2_walks_decompose_and_masks_equal_reference(name: str, qwen: pda.Vocabulary, request) -> None:
    long = request.config.getoption("--long")
    compiled = pda.compile(pda.Grammar.from_structural_tag(SPECS[name]), qwen)
    pieces = _pieces(SPECS[name])
    by_bytes = {t: i for i, t in enumerate(qwen.tokens) if t and i not in qwen.eos_ids}
    rng, nprng = random.Random(f"st:{name}"), np.random.default_rng(0)
    finished, tagged, states, walks = 0, 0, 0, 0
    goal_finished, goal_states = (200, 1000) if long else (20, 40)
    while finished < goal_finished or states < goal_states:
        text, checked = _walk(compiled, rng, pieces, by_bytes, 8 if states < goal_states else 0, nprng)
        states += checked
        walks += 1
        assert walks < 20 * goal_finished, f"only {finished} of {walks} walks finished"
        if text is None:
            continue
        decoded = text.decode("utf-8")
        assert _decompose(name, decoded), decoded
        finished += 1
        tagged += any(tag in decoded for tag in ("<function=", "<tool_call>", "</think>", "<date>"))
    # the walks reach the islands (or, without islands, never write one)
    assert tagged == 0 if name == "no_call" else tagged >= finished // 10


# ---------------------------------------------------------------------- %json in Lark text


def test_json_schema_inside_lark_text() -> None:
    g = pda.Grammar.from_lark('''
start: "Answer: " %json {"type": "object", "properties": {"n": {"type": "integer"}},
                         "required": ["n"], "additionalProperties": false} "\\n" tail
tail: "done" | "ok " %json {"enum": ["a", "b"]}
''')
    assert g.accepts('Answer: {"n": 3}\ndone') and g.accepts('Answer: {"n":3}\nok "b"')
    assert not g.accepts('Answer: {"n": "x"}\ndone') and not g.accepts('Answer: {"n": 3}\nok "c"')
    # `%json` inside a string, a regex or a comment is text, not an item
    assert pda.Grammar.from_lark('start: "%json {}" | /%json\\[/ // %json {\n').accepts("%json {}")


def test_json_items_keep_line_numbers_and_name_bad_schemas() -> None:
    with pytest.raises(pda.GrammarError) as info:
        pda.Grammar.from_lark('start: "a" x\nx: %json {"type":\n  "integer"}\n  | "b" )\n')
    assert info.value.line == 4  # the syntax error's line, after a schema over two lines
    with pytest.raises(pda.GrammarError, match="line 2") as info:
        pda.Grammar.from_lark('start: x\nx: "a" %json {"type": 5}\n')
    assert "#/type" in str(info.value)
    with pytest.raises(pda.GrammarError, match="needs a JSON Schema"):
        pda.Grammar.from_lark('start: "a" %json [1]')


def test_a_shipped_grammar_inside_lark_text() -> None:
    g = pda.Grammar.from_lark('start: "Data: " %grammar json "; end"\n')
    assert g.accepts('Data: {"a": [1, 2]}; end') and g.accepts('Data: { "a" : [ 1 ] } ; end')
    assert not g.accepts('Data: {"a": [1, 2]; end') and not g.accepts('Data:{"a": 1}; end')
    assert not pda.Grammar.from_lark('start: "x" %grammar json').accepts(' x{}')  # json's %ignore stays inside
    for name, why in (("nope", "no shipped grammar"), ("python", "lexer mode"), ("sqlite", "lexer mode")):
        with pytest.raises(pda.GrammarError, match=why):
            pda.Grammar.from_lark(f"start: %grammar {name}")


def test_qwen2_masks_next_to_a_partial_trigger_equal_the_reference_on_every_token(qwen: pda.Vocabulary) -> None:
    """States inside free text that ends with part of a trigger (or of a tag's end), every token checked."""
    compiled = pda.compile(pda.Grammar.from_structural_tag(SPECS["tools"]), qwen)
    for text in ("Let me check <", "Let me check <func", "hi <function=get_wea", 'x <function=noop>{}</func'):
        node, q = compiled.initial_state()
        node, q = compiled.scanner.feed(node, q, text.encode())
        assert mask_mismatches(compiled, node, q) == [], text
