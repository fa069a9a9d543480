"""JSON Schema → Lark grammar text, for pda's contextual greedy lexer.

Layout of the output: JSON structure (objects, arrays, members, repetition) is
rules; every scalar (a string with its pattern/format/length, a number with its
bounds, a property name, a literal) is one terminal. Each string terminal spans a
whole JSON string lexeme, quotes included, and matches every JSON encoding of the
allowed values (raw UTF-8, short escapes, ``\\uXXXX`` in either case, surrogate
pairs), so greedy longest-match lexing of a valid instance always ends a string
terminal at its closing quote; when a property-name terminal and a generic
string terminal match the same lexeme, pda hands both to the parser.

Semantics that differ from a full validator are listed in docs/json_schema.md;
each one either raises `GrammarError` (``strict=True``) or warns with
`JsonSchemaWarning` (``strict=False``) naming the keyword and the JSON path.
"""

from __future__ import annotations

import json
import re
import warnings
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from pda.errors import GrammarError, RegexError
from pda.grammar import ecma_regex as er

MAX_WHITESPACE_RUN = 64
"""Longest run of JSON white space between two tokens with ``whitespace="flexible"``."""

MAX_ENUMERATED_MULTIPLES = 1000
"""`multipleOf` on a bounded integer range is enumerated up to this many values."""

MAX_COUNTED_PROPERTIES = 64
"""Largest `minProperties`/`maxProperties` bound tracked (rules grow with bound x properties)."""

_ANNOTATIONS = {
    "$schema", "$id", "id", "$comment", "$anchor", "$vocabulary", "title", "description",
    "default", "examples", "example", "deprecated", "readOnly", "writeOnly", "$defs",
    "definitions", "contentMediaType", "contentEncoding", "contentSchema",
}
_HANDLED = {
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "items",
    "prefixItems", "additionalItems", "minItems", "maxItems", "contains", "minLength",
    "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "$ref", "not", "if", "then",
    "else", "uniqueItems", "minContains", "maxContains", "nullable",
}
_UNSUPPORTED = {
    "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef",
}
_TYPES = ("null", "boolean", "object", "array", "string", "integer", "number")

_FORMATS = {
    # RFC 3339 full-date with the real month lengths and leap years.
    "date": r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
            r"|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])"
            r"|(?:[02468][048]|[13579][26])00)-02-29)",
    "time": r"(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]|23:59:60)(?:\.[0-9]+)?"
            r"(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\.){3}"
            r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])",
    "hostname": r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*",
    "email": r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
             r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
             r"|\[(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])\])",
    "uri": r"[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*"
           r"(?:#(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?",
}
_H16 = r"[0-9A-Fa-f]{1,4}"
_V4 = _FORMATS["ipv4"]
_FORMATS["ipv6"] = "(?:" + "|".join([
    rf"(?:{_H16}:){{7}}{_H16}", rf"(?:{_H16}:){{6}}{_V4}",
    *[rf"(?:{_H16}:){{0,{k}}}{_H16}?::(?:{_H16}:){{0,{5 - k}}}(?:{_H16}|{_V4})" for k in range(0, 6)],
    rf"(?:{_H16}:){{0,6}}{_H16}?::",
]) + ")"
_FORMATS["date-time"] = _FORMATS["date"] + "[Tt ]" + _FORMATS["time"]
# ISO 8601 duration with at least one component (and at least one after T).
_FORMATS["duration"] = (r"P(?:[0-9]+W|(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)"
    r"(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?"
    r"|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))")

_JSON_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"


class JsonSchemaWarning(UserWarning):
    """A schema keyword was relaxed (``strict=False``) or approximated; the message says how."""


def _pointer(path: tuple[str, ...]) -> str:
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


def _canon(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, ensure_ascii=True)


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


class _Compiler:
    """One schema's lowering: rules and terminals accumulate as subschemas are visited."""

    def __init__(self, root: Any, whitespace: str, strict: bool) -> None:
        if whitespace not in ("compact", "flexible"):
            raise GrammarError(f"whitespace must be 'compact' or 'flexible', not {whitespace!r}")
        self.root = root
        self.strict = strict
        self.ws: list[str] = ["WS?"] if whitespace == "flexible" else []
        self.rules: dict[str, list[list[str]]] = {}
        self.rule_by_body: dict[str, str] = {}
        self.terminals: dict[str, str] = {}
        self.terminal_by_regex: dict[str, str] = {}
        self.memo: dict[str, str | None] = {}
        self.count = 0
        self.used: set[str] = set()
        self._any: str | None = None
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = any(d in schema_uri for d in ("draft-03", "draft-04", "draft-06", "draft-07"))
        self.anchors: dict[str, Any] = {}
        self._scan_ids(root)

    # ----------------------------------------------------------- bookkeeping

    def _scan_ids(self, node: Any) -> None:
        if isinstance(node, dict):
            for key in ("$id", "id"):
                v = node.get(key)
                if isinstance(v, str):
                    self.anchors.setdefault(v, node)
                    if "#" in v and not v.endswith("#"):
                        self.anchors.setdefault("#" + v.split("#", 1)[1], node)
            if isinstance(node.get("$anchor"), str):
                self.anchors.setdefault("#" + node["$anchor"], node)
            for k, v in node.items():
                if k not in ("enum", "const", "default", "examples"):
                    self._scan_ids(v)
        elif isinstance(node, list):
            for v in node:
                self._scan_ids(v)

    def unsupported(self, keyword: str, path: tuple[str, ...], relaxation: str) -> None:
        msg = f"JSON Schema keyword {keyword!r} at {_pointer(path)} is not supported"
        if self.strict:
            raise GrammarError(f"{msg}; with strict=False it is relaxed: {relaxation}")
        warnings.warn(f"{msg}; relaxed: {relaxation}", JsonSchemaWarning, stacklevel=4)

    def approximate(self, keyword: str, path: tuple[str, ...], how: str) -> None:
        warnings.warn(f"JSON Schema keyword {keyword!r} at {_pointer(path)} is approximated: {how}",
                      JsonSchemaWarning, stacklevel=4)

    def terminal(self, regex: str, hint: str = "T") -> str:
        name = self.terminal_by_regex.get(regex)
        if name is None:
            name = f"{hint}_{len(self.terminals)}"
            self.terminals[name] = regex
            self.terminal_by_regex[regex] = name
        return name

    def literal(self, text: str) -> str:
        return self.terminal("".join(er._py_char(ord(c)) for c in text), "LIT")

    def rule(self, alts: list[list[str]]) -> str | None:
        """A rule with these alternatives (deduplicated by content); None if there are none."""
        uniq: list[list[str]] = []
        for a in alts:
            if a not in uniq:
                uniq.append(a)
        if not uniq:
            return None
        if len(uniq) == 1 and len(uniq[0]) == 1 and uniq[0][0].islower():
            return uniq[0][0]
        key = _canon(uniq)
        name = self.rule_by_body.get(key)
        if name is None:
            name = self.reserve()
            self.rules[name] = uniq
            self.rule_by_body[key] = name
        return name

    def reserve(self) -> str:
        name = f"r{self.count}"
        self.count += 1
        self.rules[name] = []
        return name

    # -------------------------------------------------------------- refs/merge

    def resolve(self, ref: str, path: tuple[str, ...]) -> Any:
        if ref in self.anchors:
            return self.anchors[ref]
        if not ref.startswith("#"):
            base = ref.split("#", 1)
            if base[0] in self.anchors:
                node = self.anchors[base[0]]
                return self._walk(node, base[1] if len(base) > 1 else "", ref, path)
            raise GrammarError(f"$ref {ref!r} at {_pointer(path)}: remote references are not supported")
        return self._walk(self.root, ref[1:], ref, path)

    def _walk(self, node: Any, pointer: str, ref: str, path: tuple[str, ...]) -> Any:
        if pointer and not pointer.startswith("/"):
            if "#" + pointer in self.anchors:
                return self.anchors["#" + pointer]
            raise GrammarError(f"$ref {ref!r} at {_pointer(path)}: unknown anchor")
        for part in pointer.split("/")[1:]:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError):
                raise GrammarError(f"$ref {ref!r} at {_pointer(path)} does not resolve") from None
        return node

    def merge(self, a: Any, b: Any, path: tuple[str, ...]) -> Any:
        """allOf of two schemas as one schema (exact for the keywords merged here)."""
        if a is True or a == {}:
            return b
        if b is True or b == {}:
            return a
        if a is False or b is False:
            return False
        out = dict(a)
        for k, v in b.items():
            if k not in out or out[k] == v or k in _ANNOTATIONS:
                out.setdefault(k, v)
                continue
            w = out[k]
            if k == "type":
                ta = {w} if isinstance(w, str) else set(w)
                tb = {v} if isinstance(v, str) else set(v)
                both = {t for t in ta if t in tb or (t == "integer" and "number" in tb)}
                both |= {t for t in tb if t == "integer" and "number" in ta}
                out[k] = sorted(both)
            elif k == "required":
                out[k] = list(dict.fromkeys(list(w) + list(v)))
            elif k in ("minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum") \
                    and not isinstance(v, bool) and not isinstance(w, bool):
                out[k] = max(w, v)
            elif k in ("maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum") \
                    and not isinstance(v, bool) and not isinstance(w, bool):
                out[k] = min(w, v)
            elif k == "enum":
                out[k] = [x for x in w if any(_canon(x) == _canon(y) for y in v)]
            elif k == "properties" and "additionalProperties" not in a and "additionalProperties" not in b \
                    and "patternProperties" not in a and "patternProperties" not in b:
                props = dict(w)
                for name, s in v.items():
                    props[name] = self.merge(props[name], s, path + ("properties", name)) if name in props else s
                out[k] = props
            elif k == "allOf":
                out[k] = list(w) + list(v)
            elif k in ("anyOf", "oneOf"):
                # anyOf(A) and anyOf(B) = anyOf over pairs; likewise for oneOf (exactly one
                # pair matches iff exactly one branch of each side does).
                out[k] = [{"allOf": [x, y]} for x in w for y in v]
            elif k in ("items", "additionalProperties", "propertyNames", "contains") \
                    and isinstance(v, (dict, bool)) and isinstance(w, (dict, bool)):
                out[k] = self.merge(w, v, path + (k,))
            else:
                self.unsupported(f"allOf/{k}", path, f"the first value of {k!r} is kept")
        return out

    def flatten(self, schema: Any, path: tuple[str, ...], seen: frozenset[str] = frozenset()) -> Any:
        """Inline `$ref` (with its siblings) and `allOf` into one schema, one level deep."""
        if not isinstance(schema, dict):
            return schema
        if "$ref" in schema and isinstance(schema["$ref"], str):
            ref = schema["$ref"]
            if ref in seen:
                raise GrammarError(f"$ref {ref!r} at {_pointer(path)} refers to itself without consuming input")
            target = self.resolve(ref, path)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            if self.old_draft:
                rest = {k: v for k, v in rest.items() if k in ("definitions", "$defs")}
            schema = self.merge(self.flatten(target, path, seen | {ref}), rest, path)
            return self.flatten(schema, path, seen | {ref})
        if "allOf" in schema:
            merged: Any = {k: v for k, v in schema.items() if k != "allOf"}
            for i, sub in enumerate(schema["allOf"]):
                merged = self.merge(merged, self.flatten(sub, path + ("allOf", str(i)), seen), path)
                if merged is False:
                    return False
            return self.flatten(merged, path, seen)
        return schema

    # ---------------------------------------------------------------- values

    def value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        """The rule for instances of `schema`; None when no instance exists."""
        if schema is True or schema == {}:
            return self.any_value()
        if schema is False:
            return None
        if not isinstance(schema, dict):
            raise GrammarError(f"schema at {_pointer(path)} must be an object or a boolean")
        key = _canon(schema)
        if key in self.memo:
            name = self.memo[key]
            if name is not None and not self.rules.get(name):
                self.used.add(name)  # a recursive use of a schema still being lowered
            return name
        # Reserve the rule first so recursive schemas terminate.
        name = self.reserve()
        self.memo[key] = name
        if "$ref" in schema and set(schema) <= {"$ref"} | _ANNOTATIONS:
            body = self.value(self.flatten(self.resolve(schema["$ref"], path), path), path)
        else:
            body = self._value(self.flatten(schema, path), path)
        if body is None:
            if name in self.used:
                raise GrammarError(f"schema at {_pointer(path)} is recursive and unsatisfiable")
            del self.rules[name]
            self.memo[key] = None
            return None
        self.rules[name] = [[body]]
        return name

    def _value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        if not isinstance(schema, dict):
            return self.value(schema, path)
        for k in schema:
            if k in _UNSUPPORTED:
                self.unsupported(k, path + (k,), f"{k!r} is ignored (the grammar accepts more)")
        if "not" in schema:
            if schema["not"] is True or schema["not"] == {}:
                return None
            if schema["not"] is not False:
                self.unsupported("not", path + ("not",), "'not' is ignored (the grammar accepts more)")
        if "if" in schema and ("then" in schema or "else" in schema):
            self.unsupported("if", path + ("if",), "'if'/'then'/'else' are ignored (the grammar accepts more)")
        if schema.get("uniqueItems") is True:
            self.unsupported("uniqueItems", path + ("uniqueItems",),
                             "'uniqueItems' is ignored (duplicates are accepted)")
        base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "not", "if", "then", "else")}
        for comb in ("anyOf", "oneOf"):
            if comb in schema:
                rest = {k: v for k, v in schema.items() if k != comb}
                branches = [self.flatten(self.merge(rest, self.flatten(b, path + (comb, str(i))), path),
                                         path + (comb, str(i)))
                            for i, b in enumerate(schema[comb])]
                if comb == "oneOf" and not self.disjoint(branches):
                    self.approximate("oneOf", path + ("oneOf",),
                                     "branches may overlap; matched as anyOf (an instance valid "
                                     "against several branches is accepted)")
                alts = [self.value(b, path + (comb, str(i))) for i, b in enumerate(branches)]
                return self.rule([[a] for a in alts if a is not None])
        return self.typed(base, path)

    def disjoint(self, branches: list[Any]) -> bool:
        """True when no instance can satisfy two branches (checked on types, consts, enums)."""
        def types(b: Any) -> set[str]:
            if not isinstance(b, dict):
                return set(_TYPES) if b is not False else set()
            if "const" in b:
                return {_json_type(b["const"])}
            if "enum" in b:
                return {_json_type(v) for v in b["enum"]}
            t = b.get("type")
            if t is None:
                return set(_TYPES)
            ts = {t} if isinstance(t, str) else set(t)
            return ts | ({"integer"} if "number" in ts else set())

        def values(b: Any) -> set[str] | None:
            if isinstance(b, dict) and "const" in b:
                return {_canon(b["const"])}
            if isinstance(b, dict) and "enum" in b:
                return {_canon(v) for v in b["enum"]}
            return None

        def tag(b: Any) -> dict[str, set[str]]:
            """Required properties whose value is fixed (discriminators)."""
            out = {}
            if isinstance(b, dict):
                for name, s in (b.get("properties") or {}).items():
                    if name in (b.get("required") or []):
                        s = self.flatten(s, ())
                        v = values(s)
                        if v is not None:
                            out[name] = v
            return out

        for i in range(len(branches)):
            for j in range(i + 1, len(branches)):
                a, b = branches[i], branches[j]
                shared = types(a) & types(b)
                if "number" in shared and not ({"number", "integer"} <= types(a) & types(b)):
                    shared.discard("number")
                if not shared:
                    continue
                va, vb = values(a), values(b)
                if va is not None and vb is not None and not (va & vb):
                    continue
                ta, tb = tag(a), tag(b)
                if shared <= {"object"} and any(not (ta[n] & tb[n]) for n in ta.keys() & tb.keys()):
                    continue
                return False
        return True

    def typed(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        t = schema.get("type")
        types = set(_TYPES) if t is None else ({t} if isinstance(t, str) else set(t))
        if schema.get("nullable") is True:
            types.add("null")
        for x in types:
            if x not in _TYPES:
                raise GrammarError(f"unknown type {x!r} at {_pointer(path + ('type',))}")
        if "const" in schema or "enum" in schema:
            return self.enum(schema, types, path)
        if "number" in types:
            types.discard("integer")
        alts: list[list[str]] = []
        for ty in _TYPES:
            if ty not in types:
                continue
            sym: str | None
            if ty == "null":
                sym = self.literal("null")
            elif ty == "boolean":
                sym = self.rule([[self.literal("true")], [self.literal("false")]])
            elif ty in ("integer", "number"):
                sym = self.number(schema, ty == "integer", path)
            elif ty == "string":
                sym = self.string(schema, path)
            elif ty == "array":
                sym = self.array(schema, path)
            else:
                sym = self.object(schema, path)
            if sym is not None:
                alts.append([sym])
        return self.rule(alts)

    # ---------------------------------------------------------------- enum

    def enum(self, schema: dict[str, Any], types: set[str], path: tuple[str, ...]) -> str | None:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        if "const" in schema and "enum" in schema:
            values = [v for v in values if any(_canon(v) == _canon(e) for e in schema["enum"])]
        rest = {k: v for k, v in schema.items() if k not in ("const", "enum", "type", "nullable")}
        alts = []
        for v in values:
            vt = _json_type(v)
            if not (vt in types or (vt == "integer" and "number" in types)):
                continue
            if rest and not self._const_satisfies(v, rest, path):
                continue
            alts.append([self.const(v)])
        return self.rule(alts)

    def _const_satisfies(self, v: Any, rest: dict[str, Any], path: tuple[str, ...]) -> bool:
        """Check a constant against its sibling keywords (those that matter for scalars)."""
        if isinstance(v, str):
            if len(v) < rest.get("minLength", 0) or len(v) > rest.get("maxLength", len(v)):
                return False
            if isinstance(rest.get("pattern"), str):
                try:
                    return re.search(er.ecma_to_python(rest["pattern"]), v) is not None
                except re.error:
                    return True
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            d = Decimal(str(v))
            for k, ok in (("minimum", lambda b: d >= b), ("maximum", lambda b: d <= b),
                          ("exclusiveMinimum", lambda b: d > b), ("exclusiveMaximum", lambda b: d < b)):
                b = rest.get(k)
                if isinstance(b, (int, float)) and not isinstance(b, bool) and not ok(Decimal(str(b))):
                    return False
        return True

    def const(self, v: Any) -> str:
        if v is None or isinstance(v, bool):
            return self.literal(json.dumps(v))
        if isinstance(v, (int, float)):
            d = Decimal(str(v))
            return self.terminal(self.number_regex(d, False, d, False, path=()), "NUM")
        if isinstance(v, str):
            return self.terminal(er.literal_string_regex(v), "STR")
        ws = self.ws
        if isinstance(v, list):
            if not v:
                return self.rule([[self.literal("["), *ws, self.literal("]")]]) or ""
            seq = [self.literal("["), *ws]
            for i, x in enumerate(v):
                if i:
                    seq += [*ws, self.literal(","), *ws]
                seq.append(self.const(x))
            return self.rule([seq + [*ws, self.literal("]")]]) or ""
        if not v:
            return self.rule([[self.literal("{"), *ws, self.literal("}")]]) or ""
        seq = [self.literal("{"), *ws]
        for i, (k, x) in enumerate(v.items()):
            if i:
                seq += [*ws, self.literal(","), *ws]
            seq += [self.terminal(er.literal_string_regex(k), "KEY"), *ws, self.literal(":"), *ws, self.const(x)]
        return self.rule([seq + [*ws, self.literal("}")]]) or ""

    # --------------------------------------------------------------- numbers

    def number(self, schema: dict[str, Any], integer: bool, path: tuple[str, ...]) -> str | None:
        lo, lo_ex, hi, hi_ex = None, False, None, False
        for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            b = schema.get(k)
            if b is None or isinstance(b, bool) or not isinstance(b, (int, float)):
                continue
            d = Decimal(str(b))
            if k.endswith("inimum"):
                ex = k.startswith("exclusive") or schema.get("exclusiveMinimum") is True
                if lo is None or d > lo or (d == lo and ex):
                    lo, lo_ex = d, ex
            else:
                ex = k.startswith("exclusive") or schema.get("exclusiveMaximum") is True
                if hi is None or d < hi or (d == hi and ex):
                    hi, hi_ex = d, ex
        m = schema.get("multipleOf")
        if m is not None:
            md = Decimal(str(m))
            if md == md.to_integral_value():
                integer = True
            else:
                self.unsupported("multipleOf", path + ("multipleOf",), "'multipleOf' is ignored")
                m = None
        if integer:
            ilo = None if lo is None else (int(lo) + 1 if lo_ex and lo == int(lo) else -(-lo // 1))
            ihi = None if hi is None else (int(hi) - 1 if hi_ex and hi == int(hi) else hi // 1)
            ilo = None if ilo is None else int(ilo)
            ihi = None if ihi is None else int(ihi)
            if ilo is not None and ihi is not None and ilo > ihi:
                return None
            if m is not None and int(Decimal(str(m))) != 1:
                step = int(Decimal(str(m)))
                if ilo is None or ihi is None or (ihi - ilo) // step > MAX_ENUMERATED_MULTIPLES:
                    self.unsupported("multipleOf", path + ("multipleOf",),
                                     "'multipleOf' is ignored (only bounded ranges with few multiples are exact)")
                else:
                    first = -(-ilo // step) * step
                    vals = list(range(first, ihi + 1, step))
                    return self.rule([[self.terminal(self.int_regex(x, x), "INT")] for x in vals])
            if ilo is None and ihi is None:
                return self.terminal(r"-?(?:0|[1-9][0-9]*)(?:\.0+)?(?:[eE]\+?[0-9]+)?", "INT")
            return self.terminal(self.int_regex(ilo, ihi), "INT")
        if lo is None and hi is None:
            return self.terminal(_JSON_NUMBER, "NUM")
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_ex or hi_ex))):
            return None
        return self.terminal(self.number_regex(lo, lo_ex, hi, hi_ex, path), "NUM")

    def int_regex(self, lo: int | None, hi: int | None) -> str:
        """Integers in lo..hi (None = unbounded), plain decimal, optionally with a zero fraction."""
        alts = []
        if hi is None or hi >= 0:
            alts.append(er.decimal_range_regex(max(lo or 0, 0), hi))
        if lo is None or lo <= 0:
            alts.append("-" + er.decimal_range_regex(0 if hi is None else max(-hi, 0), None if lo is None else -lo))
        return "(?:" + "|".join(alts) + r")(?:\.0+)?"

    def number_regex(self, lo: Decimal | None, lo_ex: bool, hi: Decimal | None, hi_ex: bool,
                     path: tuple[str, ...]) -> str:
        """Plain-decimal JSON numbers in the interval (exponent notation is not accepted here)."""
        alts = []
        if hi is None or hi >= 0:
            a, a_ex = (Decimal(0), False) if lo is None or lo < 0 else (lo, lo_ex)
            alts.append(self.magnitude(a, a_ex, hi, hi_ex, path))
        if lo is None or lo <= 0:
            a, a_ex = (Decimal(0), False) if hi is None or hi > 0 else (-hi, hi_ex)
            alts.append("-" + self.magnitude(a, a_ex, None if lo is None else -lo, lo_ex, path))
        return "(?:" + "|".join(x for x in alts if x != "-") + ")"

    def magnitude(self, a: Decimal, a_ex: bool, b: Decimal | None, b_ex: bool, path: tuple[str, ...]) -> str:
        """Unsigned plain decimals `I(.F)?` with a <= value <= b (strict where *_ex)."""
        ia, fa = _split(a)
        alts = []
        if b is None:
            alts.append(er.decimal_range_regex(ia + 1, None) + r"(?:\.[0-9]+)?")
            alts.append(str(ia) + _frac_ge(fa, a_ex))
        else:
            ib, fb = _split(b)
            if ia == ib:
                if fa and fb or a_ex and fb:
                    self.unsupported("minimum/maximum", path,
                                     "bounds with fractions inside one integer are widened to that integer")
                    return str(ia) + r"(?:\.[0-9]+)?"
                return str(ia) + (_frac_le(fb, b_ex) if not fa and not a_ex else _frac_ge(fa, a_ex) if not fb
                                  and not b_ex else r"(?:\.0+)?")
            if ib - ia >= 2:
                alts.append(er.decimal_range_regex(ia + 1, ib - 1) + r"(?:\.[0-9]+)?")
            alts.append(str(ia) + _frac_ge(fa, a_ex))
            alts.append(str(ib) + _frac_le(fb, b_ex))
        alts = [x for x in alts if x is not None and "(?!)" not in x]
        return "(?:" + "|".join(alts) + ")"

    # --------------------------------------------------------------- strings

    def string(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        lo = int(schema.get("minLength", 0))
        hi = schema.get("maxLength")
        hi = None if hi is None else int(hi)
        if hi is not None and hi < lo:
            return None
        infos: list[er.PatternInfo] = []
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                info = er.ecma_pattern_body(pattern)
            except RegexError as exc:
                if self.strict:
                    raise GrammarError(f"{exc} (at {_pointer(path + ('pattern',))})") from None
                warnings.warn(f"{exc} at {_pointer(path + ('pattern',))}; relaxed: 'pattern' is ignored",
                              JsonSchemaWarning, stacklevel=3)
                info = er.PatternInfo(f"(?:{er.ANY_UNIT})*", 0, None)
            if info is None:
                return None
            infos.append(info)
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            info = er.python_pattern_body(_FORMATS[fmt], search=False)
            assert info is not None
            infos.append(info)
        if len(infos) > 1:
            self.unsupported("format", path + ("format",), "'format' is ignored when 'pattern' is present")
            infos = infos[:1]
        if not infos:
            count = "*" if (lo, hi) == (0, None) else f"{{{lo},}}" if hi is None else f"{{{lo},{hi}}}"
            return self.terminal(f'"(?:{er.ANY_UNIT}){count}"', "STR")
        info = infos[0]
        fits = info.min_len >= lo and (hi is None or (info.max_len is not None and info.max_len <= hi))
        if not fits:
            if (info.max_len is not None and info.max_len < lo) or (hi is not None and info.min_len > hi):
                return None
            clamped = er.ecma_pattern_body(pattern, min_len=lo, max_len=hi) if isinstance(pattern, str) \
                and len(infos) == 1 and "format" not in schema else None
            if clamped is None:
                self.unsupported("minLength/maxLength", path,
                                 "the length bounds are ignored for strings constrained by pattern or format")
            else:
                info = clamped
        return self.terminal(f'"{info.body}"', "STR")

    # ---------------------------------------------------------------- arrays

    def repeat(self, item: str, lo: int, hi: int | None) -> list[str]:
        """Symbols for `item` repeated lo..hi times, in O(log) rules (unambiguous)."""
        seq = self.exactly(item, lo) if lo else []
        if hi is None:
            star = self.reserve()
            self.rules[star] = [[], [item, star]]
            return seq + [star]
        if hi > lo:
            seq.append(self.upto(item, hi - lo))
        return seq

    def exactly(self, item: str, k: int) -> list[str]:
        if k == 0:
            return []
        if k == 1:
            return [item]
        half = self.rule([self.exactly(item, k // 2)]) or ""
        return [half, half] + ([item] if k % 2 else [])

    def upto(self, item: str, n: int) -> str:
        """item{0,n}: odd n = item? (item item){0,(n-1)/2}; even n = (item item){0,n/2} | item (item item){0,n/2-1}."""
        if n == 0:
            return self.rule([[]]) or ""
        if n == 1:
            return self.rule([[], [item]]) or ""
        pair = self.rule([[item, item]]) or ""
        if n % 2:
            return self.rule([[self.upto(pair, (n - 1) // 2)], [item, self.upto(pair, (n - 1) // 2)]]) or ""
        return self.rule([[self.upto(pair, n // 2)], [item, self.upto(pair, n // 2 - 1)]]) or ""

    def array(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        prefix = schema.get("prefixItems")
        items = schema.get("items", True)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        prefix = list(prefix or [])
        lo = int(schema.get("minItems", 0))
        hi = schema.get("maxItems")
        hi = None if hi is None else int(hi)
        contains = schema.get("contains")
        ws, comma = self.ws, self.literal(",")
        open_, close = self.literal("["), self.literal("]")
        psyms = [self.value(p, path + ("prefixItems", str(i))) for i, p in enumerate(prefix)]
        rest = self.value(items, path + ("items",))
        if contains is not None:
            if prefix or lo > 1 or hi is not None or schema.get("minContains", 1) != 1 or "maxContains" in schema:
                self.unsupported("contains", path + ("contains",),
                                 "'contains' is ignored with prefixItems, item counts or min/maxContains")
            else:
                hit = self.value(self.merge(self.flatten(items, path), self.flatten(contains, path), path),
                                 path + ("contains",))
                if hit is None:
                    return None
                sep_rest = self.rule([[*ws, comma, *ws, rest]]) if rest else None
                sep_hit = self.rule([[*ws, comma, *ws, hit]]) or ""
                before = [rest, *self.repeat(sep_rest, 0, None)] if sep_rest and rest else None
                after = self.repeat(sep_rest, 0, None) if sep_rest else []
                alts = [[hit, *after]]
                if before:
                    alts.append([*before, sep_hit, *after])
                body = self.rule(alts)
                return self.rule([[open_, *ws, body or "", *ws, close]])
        # chain(j): what may follow once j >= 1 items are written.
        k = len(prefix)
        sep_rest = self.rule([[*ws, comma, *ws, rest]]) if rest is not None else None
        chain: str | None = None
        if k:
            if sep_rest is not None and (hi is None or hi > k):
                chain = self.rule([self.repeat(sep_rest, max(lo - k, 0), None if hi is None else hi - k)])
            elif lo <= k:
                chain = self.rule([[]])
            for j in range(k - 1, 0, -1):
                options: list[list[str]] = []
                if lo <= j:
                    options.append([])
                if psyms[j] is not None and chain is not None and (hi is None or j + 1 <= hi):
                    options.append([*ws, comma, *ws, psyms[j], chain])
                chain = self.rule(options)
            body = self.rule([[psyms[0], chain]]) if psyms[0] is not None and chain is not None else None
        elif rest is not None and sep_rest is not None and (hi is None or hi >= 1):
            body = self.rule([[rest, *self.repeat(sep_rest, max(lo - 1, 0), None if hi is None else hi - 1)]])
        else:
            body = None
        if hi is not None and hi == 0:
            body = None
        alts: list[list[str]] = []
        if lo == 0:
            alts.append([open_, *ws, close])
        if body is not None:
            alts.append([open_, *ws, body, *ws, close])
        return self.rule(alts)

    # --------------------------------------------------------------- objects

    def object(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        props: dict[str, Any] = dict(schema.get("properties") or {})
        required = [r for r in schema.get("required") or [] if isinstance(r, str)]
        addl = schema.get("additionalProperties", True)
        patterns: dict[str, Any] = dict(schema.get("patternProperties") or {})
        names_schema = schema.get("propertyNames", True)
        min_p = int(schema.get("minProperties", 0))
        max_p = schema.get("maxProperties")
        max_p = None if max_p is None else int(max_p)
        ws, comma, colon = self.ws, self.literal(","), self.literal(":")
        # Required names without a declared schema are declared with the extras' schema.
        for r in required:
            if r not in props:
                matching = [s for p, s in patterns.items() if self._search(p, r, path)]
                props[r] = matching[0] if len(matching) == 1 else {"allOf": matching} if matching else addl
        names = list(props)
        if names_schema not in (True, {}):
            ns = self.flatten(names_schema, path + ("propertyNames",))
            for n in names:
                if not self._name_ok(n, ns, path):
                    props[n] = False
        member_syms: list[str | None] = []
        for n in names:
            s = props[n]
            for p, ps in patterns.items():
                if self._search(p, n, path):
                    s = self.merge(self.flatten(s, path), self.flatten(ps, path), path)
            v = self.value(s, path + ("properties", n))
            if v is None:
                member_syms.append(None)
                continue
            key = self.terminal(er.literal_string_regex(n), "KEY")
            member_syms.append(self.rule([[key, *ws, colon, *ws, v]]))
        # Extra members: keys outside `properties`.
        extras: list[str] = []
        trivial = addl in (True, {}) and all(self.flatten(ps, path) in (True, {}) for ps in patterns.values())
        if patterns and not trivial:
            if addl is not False:
                self.unsupported("patternProperties", path + ("patternProperties",),
                                 "keys matching a pattern may also take the additionalProperties schema")
            if len(patterns) > 1 and len({_canon(v) for v in patterns.values()}) > 1:
                self.approximate("patternProperties", path + ("patternProperties",),
                                 "a key matching several patterns needs only one of their schemas")
            for p, ps in patterns.items():
                if any(self._search(p, n, path) for n in names):
                    self.unsupported("patternProperties", path + ("patternProperties", p),
                                     "an extra key equal to a declared property name that matches this "
                                     "pattern is accepted with the pattern's schema alone")
                try:
                    info = er.ecma_pattern_body(p)
                except RegexError as exc:
                    raise GrammarError(f"{exc} (at {_pointer(path + ('patternProperties',))})") from None
                v = self.value(ps, path + ("patternProperties", p))
                if info is not None and v is not None:
                    key = self.terminal(f'"{info.body}"', "KEY")
                    extras.append(self.rule([[key, *ws, colon, *ws, v]]) or "")
        if addl is not False:
            v = self.value(addl, path + ("additionalProperties",))
            if v is not None:
                key_sym: str | None
                if names_schema not in (True, {}):
                    ns = self.merge(self.flatten(names_schema, path), {"type": "string"}, path)
                    key_sym = self.value(ns, path + ("propertyNames",))
                    if names:
                        self.unsupported("propertyNames", path + ("propertyNames",),
                                         "an extra key equal to a declared property name is accepted "
                                         "with the additionalProperties schema")
                else:
                    key_sym = self.terminal('"' + _not_in_set(names) + '"', "KEY")
                if key_sym is not None:
                    extras.append(self.rule([[key_sym, *ws, colon, *ws, v]]) or "")
        extra = self.rule([[e] for e in extras if e])
        req = set(required)
        if any(member_syms[i] is None and n in req for i, n in enumerate(names)):
            return None
        # body(i, count, started): members from property i on; `count` saturates above the bounds.
        track = min_p > 0 or max_p is not None
        cap = max(min_p, max_p if max_p is not None else 0) + 1
        if track and cap > MAX_COUNTED_PROPERTIES + 1:
            self.unsupported("minProperties/maxProperties", path,
                             f"property counts above {MAX_COUNTED_PROPERTIES} are not enforced")
            track, min_p, max_p = False, 0, None
        memo: dict[tuple[int, int, bool], str | None] = {}
        sep_extra = self.rule([[*ws, comma, *ws, extra]]) if extra else None

        def body(i: int, c: int, started: bool) -> str | None:
            if (i, c, started) in memo:
                return memo[(i, c, started)]
            alts: list[list[str]] = []
            if i < len(names):
                m = member_syms[i]
                nc = min(c + 1, cap) if track else 0
                if m is not None and (max_p is None or c + 1 <= max_p):
                    nxt = body(i + 1, nc, True)
                    if nxt is not None:
                        alts.append(([*ws, comma, *ws] if started else []) + [m, nxt])
                if names[i] not in req:
                    nxt = body(i + 1, c, started)
                    if nxt is not None:
                        alts.append([nxt])
            else:
                need = max(min_p - c, 0) if track else 0
                room = None if max_p is None else max_p - c
                if started and need == 0:
                    alts.append([])
                if extra is not None and sep_extra is not None and (room is None or room > 0):
                    if started:
                        alts.append(self.repeat(sep_extra, max(need, 1), room))
                    else:
                        alts.append([extra, *self.repeat(sep_extra, max(need - 1, 0),
                                                         None if room is None else room - 1)])
            memo[(i, c, started)] = r = self.rule(alts)
            return r

        first = body(0, 0, False)
        open_, close = self.literal("{"), self.literal("}")
        alts = []
        if not req and min_p == 0:
            alts.append([open_, *ws, close])
        if first is not None:
            alts.append([open_, *ws, first, *ws, close])
        return self.rule(alts)

    def _search(self, pattern: str, name: str, path: tuple[str, ...]) -> bool:
        try:
            return re.search(er.ecma_to_python(pattern), name) is not None
        except (re.error, RegexError) as exc:
            raise GrammarError(f"pattern {pattern!r} at {_pointer(path)}: {exc}") from None

    def _name_ok(self, name: str, ns: Any, path: tuple[str, ...]) -> bool:
        if ns is False:
            return False
        if not isinstance(ns, dict):
            return True
        if "enum" in ns and name not in ns["enum"]:
            return False
        if "const" in ns and name != ns["const"]:
            return False
        return self._const_satisfies(name, ns, path)

    # ------------------------------------------------------------- any value

    def any_value(self) -> str:
        if self._any is not None:
            return self._any
        name = self._any = self.reserve()
        ws, comma, colon = self.ws, self.literal(","), self.literal(":")
        string = self.terminal(f'"(?:{er.ANY_UNIT})*"', "STR")
        member = self.rule([[string, *ws, colon, *ws, name]]) or ""
        sep_member = self.rule([[*ws, comma, *ws, member]]) or ""
        sep_value = self.rule([[*ws, comma, *ws, name]]) or ""
        obj = self.rule([[self.literal("{"), *ws, self.literal("}")],
                         [self.literal("{"), *ws, member, *self.repeat(sep_member, 0, None), *ws, self.literal("}")]])
        arr = self.rule([[self.literal("["), *ws, self.literal("]")],
                         [self.literal("["), *ws, name, *self.repeat(sep_value, 0, None), *ws, self.literal("]")]])
        self.rules[name] = [[self.literal("null")], [self.literal("true")], [self.literal("false")],
                            [self.terminal(_JSON_NUMBER, "NUM")], [string], [obj or ""], [arr or ""]]
        return name

    # ----------------------------------------------------------------- output

    def lark(self) -> str:
        top = self.value(self.root, ())
        if top is None:
            raise GrammarError("the schema accepts no JSON value")
        lines = [f"start: {' '.join(self.ws)} {top} {' '.join(self.ws)}".replace("  ", " ")]
        for name, alts in self.rules.items():
            if not alts:
                raise GrammarError(f"internal: rule {name} has no alternatives")
            lines.append(f"{name}: " + "\n    | ".join(" ".join(a) for a in alts))
        for name, regex in self.terminals.items():
            lines.append(f"{name}: {er._lark_regex(regex)}")
        if self.ws:
            lines.append(f"WS: /[ \\t\\n\\r]{{1,{MAX_WHITESPACE_RUN}}}/")
        return "\n".join(lines) + "\n"


def _split(d: Decimal) -> tuple[int, str]:
    """Integer part and fraction digits (no trailing zeros) of a non-negative decimal."""
    i = int(d)
    f = format(d - i, "f")
    frac = f.split(".", 1)[1].rstrip("0") if "." in f else ""
    return i, frac


def _frac_ge(f: str, strict: bool) -> str:
    """`(\\.D+)?` suffixes whose fraction value is >= 0.f (> when strict)."""
    if not f:
        return r"\.0*[1-9][0-9]*" if strict else r"(?:\.[0-9]+)?"
    alts = [f[:i] + f"[{int(f[i]) + 1}-9][0-9]*" for i in range(len(f)) if f[i] != "9"]
    alts.append(f + "0*[1-9][0-9]*")
    if not strict:
        alts.append(f + "0*")
    return r"\.(?:" + "|".join(alts) + ")"


def _frac_le(f: str, strict: bool) -> str:
    """`(\\.D+)?` suffixes whose fraction value is <= 0.f (< when strict)."""
    if not f:
        return "(?!)" if strict else r"(?:\.0+)?"
    alts = [f[:i] + f"[0-{int(f[i]) - 1}][0-9]*" for i in range(len(f)) if f[i] != "0"]
    alts += [f[:i] + "0*" for i in range(1, len(f))]
    alts.append("0+")
    if not strict:
        alts.append(f + "0*")
    return r"(?:\.(?:" + "|".join(alts) + "))?"


def _not_in_set(names: list[str]) -> str:
    """Lexeme-body regex for strings not in `names`, via the character trie of the names."""
    if not names:
        return f"(?:{er.ANY_UNIT})*"
    trie: dict[str, Any] = {}
    for n in names:
        node = trie
        for ch in n:
            node = node.setdefault(ch, {})
        node[""] = {}
    anything = f"(?:{er.ANY_UNIT})*"

    def rec(node: dict[str, Any]) -> str:
        alts = [] if "" in node else [""]
        kids = sorted(k for k in node if k)
        for k in kids:
            alts.append(er.literal_body_regex(k) + rec(node[k]))
        other = er.unit_regex(er.complement(er.normalize([(ord(k), ord(k)) for k in kids])))
        if other is not None:
            alts.append(other + anything)
        return "(?:" + "|".join(alts) + ")"

    return rec(trie)


def json_schema_to_lark(schema: dict[str, Any] | bool | str, *, whitespace: str = "compact",
                        strict: bool = True) -> str:
    """Lower a JSON Schema (a dict, a boolean, or JSON text) to Lark grammar text for pda.

    `whitespace="compact"` accepts JSON without white space between tokens;
    `"flexible"` accepts runs of up to `MAX_WHITESPACE_RUN` JSON white-space
    characters between any two tokens and around the value. Unsupported
    keywords raise `GrammarError` with their JSON path, or with `strict=False`
    warn (`JsonSchemaWarning`) and apply the relaxation the message names.
    """
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise GrammarError(f"schema is not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    return _Compiler(schema, whitespace, strict).lark()


def pydantic_to_schema(model: Any) -> dict[str, Any]:
    """A Pydantic v2 model class (or TypeAdapter-able type) as a JSON Schema dict."""
    if hasattr(model, "model_json_schema"):
        return model.model_json_schema()
    from pydantic import TypeAdapter

    return TypeAdapter(model).json_schema()
