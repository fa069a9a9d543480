"""Structural tags: free text with constrained islands, from XGrammar's `structural_tag` JSON format.

A spec is a tree of formats (`{"type": "structural_tag", "format": {...}}`, or the
format alone, or the older `{"structures": [...], "triggers": [...]}`); each becomes
rules and terminals of one grammar IR, named by the front ends' shared
`GrammarBuilder` (`pda.grammar.builder`: one terminal per distinct regex, one rule
per distinct body, counted repetition in O(log n) rules):

* `const_string`: a terminal; `regex`, `json_schema` and `grammar` (Lark, or GBNF for
  `"syntax": "ebnf"`): that front end's IR, embedded (`pda.grammar.embed`: names
  prefixed, a sub-grammar's `%ignore` kept inside it). An embedded IR keeps its
  terminals (flags, priorities, laziness) and rules as they are, beside the builder's
  ones: the builder names none of them;
* `sequence`, `or`, `optional`, `star`, `plus`, `repeat`: the EBNF operators;
* `tag`: begin, content, end; `tags_with_separator`: tags with a separator between;
* `any_text`: free text (`pda.grammar.free_text`), which must end where something
  literal begins: the end of the output, a tag's end, or a following `const_string`
  or tag begin. Text and that literal are one lexeme ("text up to the first end"),
  which is exact at the byte and token level;
* `triggered_tags`: free text in which a trigger may only begin a tag: per trigger,
  a lexeme "text up to the first trigger", then the rest of the begin of one of the
  tags that start with it, the content and the end; free text may end the output.

Formats that count tokens or name token ids (`token`, `exclude_token`, `any_tokens`,
`token_triggered_tags`, `token_dispatch`, `any_text.max_tokens`), XML argument styles and
`dispatch` are refused with a `GrammarError` naming the field, as is every malformed
value: nothing is silently approximated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pda.errors import GrammarError
from pda.grammar.builder import GrammarBuilder
from pda.grammar.embed import embed_ir
from pda.grammar.free_text import free_text_automaton
from pda.grammar.ir import GrammarIR, Rule, TerminalAutomaton, TerminalDef
from pda.regex.literals import alternation_pattern

Spec = dict[str, Any]


def structural_tag_to_ir(spec: Spec | str) -> GrammarIR:
    """The grammar of a structural tag (see the module docstring); `GrammarError` naming the field on a bad spec."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise GrammarError(f"structural tag is not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    formats = _Formats()
    root = formats.format(_root_format(spec), "$", (END,))
    ir = formats.grammar.ir([list(root)], source="<structural tag>")
    return replace(ir, terminals=ir.terminals + tuple(formats.embedded_terminals),
                   rules=ir.rules + tuple(formats.embedded_rules))


def _root_format(spec: Any) -> Spec:
    """The top format of a spec in any of its three forms."""
    if not isinstance(spec, dict):
        raise GrammarError(f"$: a structural tag is a JSON object, got {type(spec).__name__}")
    if "structures" in spec:  # the older form: triggered tags whose contents are JSON Schemas
        structures, triggers = spec["structures"], spec.get("triggers")
        if not isinstance(structures, list) or not all(isinstance(s, dict) for s in structures):
            raise GrammarError("$.structures: must be a list of {begin, schema, end} objects")
        tags = []
        for i, s in enumerate(structures):
            missing = {"begin", "schema", "end"} - set(s)
            if missing:
                raise GrammarError(f"$.structures[{i}]: missing {', '.join(sorted(missing))}")
            tags.append({"type": "tag", "begin": s["begin"], "end": s["end"],
                         "content": {"type": "json_schema", "json_schema": s["schema"]}})
        return {"type": "triggered_tags", "triggers": triggers, "tags": tags,
                "at_least_one": spec.get("at_least_one", False)}  # as SGLang passes it
    if spec.get("type") == "structural_tag":
        if "format" not in spec:
            raise GrammarError("$: a structural_tag needs a format")
        return spec["format"]
    return spec


def _fields(spec: Any, path: str, required: dict[str, type | tuple], optional: dict[str, type | tuple]) -> Spec:
    """`spec` checked: an object with these fields of these types and no others."""
    if not isinstance(spec, dict):
        raise GrammarError(f"{path}: a format is a JSON object, got {type(spec).__name__}")
    for name, kind in required.items():
        if name not in spec:
            raise GrammarError(f"{path}: {spec.get('type')} needs {name!r}")
    for name, value in spec.items():
        kind = required.get(name, optional.get(name))
        if name == "type":
            continue
        if kind is None:
            raise GrammarError(f"{path}.{name}: unknown field of {spec.get('type')}")
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
            raise GrammarError(f"{path}.{name}: must be {_kind_name(kind)}, got {json.dumps(value)[:60]}")
    return spec


def _kind_name(kind: type | tuple) -> str:
    names = {str: "a string", list: "a list", dict: "an object", bool: "true or false", int: "an integer",
             type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _strings(value: Any, path: str, *, non_empty: bool = True) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise GrammarError(f"{path}: must be a list of strings")
    if non_empty and any(not v for v in value):
        raise GrammarError(f"{path}: holds an empty string")
    return value


# What comes right after a format: the literal strings it can be followed by, or END (the
# output ends there), or None (something else: free text cannot end before it).
END = ""
Follow = tuple[str, ...] | None

_REFUSED = {
    "token": "names a token id",
    "exclude_token": "names token ids",
    "any_tokens": "counts tokens",
    "token_triggered_tags": "triggers on token ids",
    "token_dispatch": "dispatches on token ids",
    "dispatch": "is not supported yet",
    "qwen_xml_parameter": "is not supported yet",
}


class _Formats:
    """One spec's lowering: one method per format type, each returning the symbols it matches as.

    Its rules and terminals are named by `grammar` (a `GrammarBuilder`); embedded IRs'
    terminals and rules collect in `embedded_terminals` and `embedded_rules`, renamed
    with prefixes (`<stem><n>_`, lower case) that no name the builder gives starts with.
    """

    def __init__(self) -> None:
        self.grammar = GrammarBuilder()
        self.embedded_terminals: list[TerminalDef] = []
        self.embedded_rules: list[Rule] = []
        self._embedded = 0

    def rule(self, alternatives: list[tuple[str, ...]]) -> tuple[str, ...]:
        """The symbol of a rule with these alternatives (at least one)."""
        name = self.grammar.rule([list(rhs) for rhs in alternatives])
        if name is None:
            raise ValueError("a rule needs at least one alternative")
        return (name,)

    def literal(self, text: str) -> tuple[str, ...]:
        """The symbols of a literal string (none for the empty string)."""
        return (self.grammar.terminal(re.escape(text), "LIT"),) if text else ()

    def pattern(self, regex: str, hint: str) -> str:
        """The terminal of a regex (Python syntax), named `<hint>_<n>`."""
        return self.grammar.terminal(regex, hint)

    def text(self, automaton: TerminalAutomaton, hint: str) -> str:
        """The terminal of a free-text automaton (`pda.grammar.free_text`), named `<hint>_<n>`."""
        return self.grammar.automaton_terminal(automaton, hint)

    # ------------------------------------------------------------------ formats

    def format(self, spec: Any, path: str, follow: Follow) -> tuple[str, ...]:
        """The symbols matching `spec`; `follow` is what may come right after it (for free text)."""
        if not isinstance(spec, dict):
            raise GrammarError(f"{path}: a format is a JSON object, got {type(spec).__name__}")
        kind = spec.get("type")
        if kind in _REFUSED:
            raise GrammarError(f"{path}.type: {kind!r} {_REFUSED[kind]}; pda does not serve it")
        method: Callable[[Spec, str, Follow], tuple[str, ...]] | None = getattr(self, f"_{kind}", None) \
            if isinstance(kind, str) else None
        if method is None:
            raise GrammarError(f"{path}.type: unknown format type {json.dumps(kind)}")
        return method(spec, path, follow)

    def _const_string(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"value": str}, {})
        if not spec["value"]:
            return self.rule([()])
        return self.literal(spec["value"])

    def _regex(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"pattern": str}, {})
        from pda.grammar.grammar import Grammar

        try:
            ir = Grammar.from_regex(spec["pattern"]).ir
        except GrammarError as exc:
            raise GrammarError(f"{path}.pattern: {exc}") from None
        return self.embed(ir, "re")

    def _json_schema(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"json_schema": (dict, bool)},
                {"style": str, "any_order": bool, "max_whitespace_cnt": (int, type(None)), "excludes": list})
        if spec.get("style", "json") != "json":
            raise GrammarError(f"{path}.style: {spec['style']!r} is not supported (only \"json\")")
        if spec.get("max_whitespace_cnt") is not None:
            raise GrammarError(f"{path}.max_whitespace_cnt: a whitespace cap is not supported yet")
        if spec.get("excludes"):
            raise GrammarError(f"{path}.excludes: excluded substrings in JSON strings are not supported yet")
        from pda.grammar.grammar import Grammar

        order = "any" if spec.get("any_order", False) else "schema"
        try:
            ir = Grammar.from_json_schema(spec["json_schema"], whitespace="flexible", property_order=order).ir
        except GrammarError as exc:
            raise GrammarError(f"{path}.json_schema: {exc}") from None
        return self.embed(ir, "js")

    def _grammar(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"grammar": str}, {"syntax": str})
        from pda.grammar.grammar import Grammar

        syntax = spec.get("syntax", "ebnf")
        if syntax not in ("ebnf", "lark"):
            raise GrammarError(f"{path}.syntax: must be \"ebnf\" (GBNF) or \"lark\", got {syntax!r}")
        try:
            grammar = Grammar.from_gbnf(spec["grammar"]) if syntax == "ebnf" else Grammar.from_lark(spec["grammar"])
        except GrammarError as exc:
            raise GrammarError(f"{path}.grammar: {exc}") from None
        return self.embed(grammar.ir, "g")

    def _any_text(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {}, {"excludes": list, "max_tokens": (int, type(None)), "max_chars": (int, type(None))})
        for limit in ("max_tokens", "max_chars"):
            if spec.get(limit) is not None:
                raise GrammarError(f"{path}.{limit}: a length budget on free text is not supported yet")
        excludes = _strings(spec.get("excludes", []), f"{path}.excludes")
        return self.free_text(excludes, follow, path)

    def free_text(self, excludes: list[str], follow: Follow, path: str) -> tuple[str, ...]:
        """Free text (none of `excludes` in it) then the follow: lexemes of text up to each literal
        that may follow (which they include: the caller must not match it again), or text alone
        before the end of the output."""
        if follow is None:
            raise GrammarError(
                f"{path}: free text must end the output, a tag's content, or come before a const_string or a tag"
            )
        ends = [f for f in follow if f != END]
        alternatives: list[tuple[str, ...]] = [
            (self.text(free_text_automaton(excludes + ends, until=f), "TEXT_UNTIL"),) for f in ends
        ]
        if END in follow:
            alternatives += [(self.text(free_text_automaton(excludes + ends), "TEXT"),), ()]
        return self.rule(alternatives)

    def _sequence(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"elements": list}, {})
        elements = spec["elements"]
        out: list[str] = []
        i = 0
        while i < len(elements):
            element, at = elements[i], f"{path}.elements[{i}]"
            if isinstance(element, dict) and element.get("type") == "any_text" and i + 1 < len(elements):
                after = _leading_literal(elements[i + 1])
                if after is None:
                    raise GrammarError(f"{at}: free text must be followed by a const_string or a tag")
                out += self._any_text(element, at, (after,))
                # the next element's leading literal is in the text's lexeme: match the rest of it
                out += self.after_leading(elements[i + 1], f"{path}.elements[{i + 1}]",
                                          follow if i + 2 == len(elements) else None)
                i += 2
                continue
            out += self.format(element, at, follow if i + 1 == len(elements) else None)
            i += 1
        return tuple(out)

    def after_leading(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        """A const_string or tag whose leading literal was already read (by the free text before it)."""
        if spec["type"] == "const_string":
            return ()
        return self.tag_after_begin(spec, path, "")

    def _or(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"elements": list}, {})
        if not spec["elements"]:
            raise GrammarError(f"{path}.elements: an or needs at least one element")
        choices = [e.get("value") for e in spec["elements"] if isinstance(e, dict) and e.get("type") == "const_string"]
        if len(choices) == len(spec["elements"]) > 1 and all(isinstance(v, str) and v for v in choices):
            # one terminal, an alternation of literals: the finite-set engine serves it (a label set of 1,000)
            return (self.pattern(alternation_pattern(choices), "CHOICE"),)
        return self.rule([self.format(e, f"{path}.elements[{i}]", follow) for i, e in enumerate(spec["elements"])])

    def _optional(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"content": dict}, {})
        return self.rule([self.format(spec["content"], f"{path}.content", follow), ()])

    def _star(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"content": dict}, {})
        return self.repeat(spec["content"], f"{path}.content", 0, None)

    def _plus(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"content": dict}, {})
        return self.repeat(spec["content"], f"{path}.content", 1, None)

    def _repeat(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"content": dict, "min": int, "max": int}, {})
        lo, hi = spec["min"], spec["max"]
        if lo < 0 or hi != -1 and hi < lo:
            raise GrammarError(f"{path}: needs 0 <= min <= max (max -1: unbounded), got {lo}..{hi}")
        return self.repeat(spec["content"], f"{path}.content", lo, None if hi == -1 else hi)

    def repeat(self, content: Spec, path: str, lo: int, hi: int | None) -> tuple[str, ...]:
        """content{lo,hi} (hi None: unbounded); free text inside a repeat has no literal to end at."""
        (item,) = self.rule([self.format(content, path, None)])
        return tuple(self.grammar.repeat(item, lo, hi))

    def _tag(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        begin = _tag_fields(spec, path)
        return self.literal(begin) + self.tag_after_begin(spec, path, begin)

    def tag_after_begin(self, spec: Spec, path: str, begin: str) -> tuple[str, ...]:
        """A tag's content and end (its begin matched already)."""
        _tag_fields(spec, path)
        ends = [spec["end"]] if isinstance(spec["end"], str) else _strings(spec["end"], f"{path}.end")
        if not ends:
            raise GrammarError(f"{path}.end: a tag needs an end")
        content = spec["content"]
        if isinstance(content, dict) and content.get("type") == "any_text" and all(ends):
            return self._any_text(content, f"{path}.content", tuple(ends))  # the text's lexemes include the end
        body = self.format(content, f"{path}.content", tuple(ends) if all(ends) else None)
        return body + self.rule([self.literal(e) for e in ends])

    def _tags_with_separator(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"tags": list, "separator": str}, {"at_least_one": bool, "stop_after_first": bool})
        tags = self.rule([self._tag(t, f"{path}.tags[{i}]", None) for i, t in enumerate(_tag_list(spec, path))])
        if spec.get("stop_after_first", False):
            return tags if spec.get("at_least_one", False) else self.rule([tags, ()])
        (separated,) = self.rule([self.literal(spec["separator"]) + tags])
        some = tags + tuple(self.grammar.repeat(separated, 0, None))
        return some if spec.get("at_least_one", False) else self.rule([some, ()])

    def _triggered_tags(self, spec: Spec, path: str, follow: Follow) -> tuple[str, ...]:
        _fields(spec, path, {"triggers": list, "tags": list},
                {"at_least_one": bool, "stop_after_first": bool, "excludes": list})
        triggers = _strings(spec["triggers"], f"{path}.triggers")
        if not triggers:
            raise GrammarError(f"{path}.triggers: needs at least one trigger")
        excludes = _strings(spec.get("excludes", []), f"{path}.excludes")
        stops = triggers + [e for e in excludes if e not in triggers]
        segments: list[tuple[str, ...]] = []
        for i, tag in enumerate(_tag_list(spec, path)):
            at = f"{path}.tags[{i}]"
            begin = _tag_fields(tag, at)
            starts = [t for t in triggers if begin.startswith(t)]
            if len(starts) != 1:
                raise GrammarError(f"{at}.begin: {begin!r} must start with exactly one trigger, "
                                   f"{'starts with ' + ', '.join(map(repr, starts)) if starts else 'starts with none'}")
            trigger = starts[0]
            text = self.text(free_text_automaton(stops, until=trigger), "TEXT_UNTIL")
            segments.append((text, *self.literal(begin[len(trigger):]), *self.tag_after_begin(tag, at, begin)))
        segment = self.rule(segments)
        if follow is None or follow != (END,):
            raise GrammarError(f"{path}: triggered tags must end the output")
        tail = self.rule([(self.text(free_text_automaton(stops), "TEXT"),), ()])
        at_least_one, first_only = spec.get("at_least_one", False), spec.get("stop_after_first", False)
        if first_only:
            return segment if at_least_one else self.rule([segment, tail])
        loop = tuple(self.grammar.repeat(segment[0], 0, None))
        if at_least_one:
            return segment + loop + tail
        return loop + tail

    # ------------------------------------------------------------------ sub-grammars

    def embed(self, ir: GrammarIR, stem: str) -> tuple[str, ...]:
        """Another front end's IR inside this one (`pda.grammar.embed`)."""
        terminals, rules, start = embed_ir(ir, f"{stem}{self._embedded}_")
        self._embedded += 1
        self.embedded_terminals += terminals
        self.embedded_rules += rules
        return (start,)


def _tag_fields(spec: Any, path: str) -> str:
    """A tag's fields checked; its begin."""
    _fields(spec, path, {"begin": str, "content": dict, "end": (str, list)}, {})
    if spec.get("type") != "tag":
        raise GrammarError(f"{path}.type: must be \"tag\"")
    return spec["begin"]


def _tag_list(spec: Spec, path: str) -> list[Spec]:
    """The tags of a spec, each with its type (a tag in a list may leave it out)."""
    if not spec["tags"]:
        raise GrammarError(f"{path}.tags: needs at least one tag")
    return [{"type": "tag", **tag} if isinstance(tag, dict) and "type" not in tag else tag for tag in spec["tags"]]


def _leading_literal(spec: Any) -> str | None:
    """The literal a const_string or a tag starts with (what free text before it ends at), or None."""
    if not isinstance(spec, dict):
        return None
    if spec.get("type") == "const_string" and isinstance(spec.get("value"), str) and spec["value"]:
        return spec["value"]
    if spec.get("type") == "tag" and isinstance(spec.get("begin"), str) and spec["begin"]:
        return spec["begin"]
    return None
