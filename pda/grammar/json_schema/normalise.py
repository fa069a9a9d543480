"""Normalisation: a schema rewritten into the one shape the lowering reads, one level at a time.

`Normaliser.flatten` inlines `$ref` (with its siblings) and `allOf` into one
schema (`merge`: the conjunction of two schemas as one, exact for the keywords
merged there), then `desugar` rewrites `not`, `if`/`then`/`else` and dependencies
as `anyOf` conjuncts, through `negate` (a positive schema for the instances a
schema rejects). After it a schema holds no `$ref`, no `allOf` and, where they
could be rewritten, no `not`, `if` or dependencies: the lowering only sees types,
per-type keywords and unions. What cannot be negated stays, and the lowering
reports it. What normalisation must say that JSON Schema has no keyword for it
writes as the internal keywords of `keywords` (`x-pda-*`).

Only one level is flattened: subschemas (properties, items, branches) stay as they
are until the lowering reaches them, so recursive schemas terminate (`conj` defers
the merge of two subschemas the same way). Negating a finite set of values
(`not` beside `enum`) needs a verdict per value, which only a lowering can give:
the lowering passes it in as `decide`.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Callable

from pda.errors import GrammarError, RegexError
from pda.grammar import ecma_regex as er
from pda.grammar.json_schema import limits
from pda.grammar.json_schema.context import Context
from pda.grammar.json_schema.formats import FORMATS, format_pattern
from pda.grammar.json_schema.keywords import (
    ANNOTATIONS, HANDLED, MORE_ANY_OF, NON_INTEGER, NOT_IN, NOT_PATTERN, OPEN, PATTERNS, TYPES, UNSUPPORTED,
    canon, is_positive_int, json_type, json_number, pointer,
)
from pda.grammar.json_schema.refs import References

# The keywords `Normaliser.desugar` rewrites.
_DESUGARED = frozenset({"not", "if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas"})

# Whether each value is an instance of a schema (None when undecided): the lowering's verdicts.
Decide = Callable[[list[Any], Any, tuple[str, ...]], "list[bool] | None"]


def search_pattern(pattern: str, name: str, path: tuple[str, ...]) -> bool:
    """Whether an ECMA-262 `pattern` matches somewhere in `name`; a GrammarError for a bad pattern."""
    try:
        return er.python_search_regex(pattern).search(name) is not None
    except (re.error, RegexError) as exc:
        raise GrammarError(f"pattern {pattern!r} at {pointer(path)}: {exc}") from None


class Normaliser:
    """`flatten`, `merge` and `negate` for one lowering (its context, its references, its verdicts)."""

    def __init__(self, ctx: Context, refs: References, decide: Decide) -> None:
        self.ctx = ctx
        self.refs = refs
        self.decide = decide
        self.negating: set[str] = set()  # schemas being negated (a recursive one has no finite negation)

    def merge(self, a: Any, b: Any, path: tuple[str, ...]) -> Any:
        """allOf of two schemas as one schema (exact for the keywords merged here)."""
        if a is True or a == {}:
            return b
        if b is True or b == {}:
            return a
        if a is False or b is False:
            return False
        out = dict(a)
        skip: set[str] = set()
        open_a = a.get("additionalProperties", True) in (True, {})
        open_b = b.get("additionalProperties", True) in (True, {})
        with_patterns = [side for side in (a, b) if "patternProperties" in side]
        one_sided = len(with_patterns) == 1
        if ({"properties", "additionalProperties"} & (a.keys() | b.keys())
                and (not with_patterns or one_sided or open_a and open_b)):
            # A name declared on one side only must also pass the other side's
            # additionalProperties, or its patterns that the name matches (kept below);
            # names declared on neither side pass both.
            pa, pb = a.get("properties") or {}, b.get("properties") or {}
            aa, ab = a.get("additionalProperties", True), b.get("additionalProperties", True)
            matched = self._pattern_matched_names(a, b, path) if one_sided else set()
            props = {n: conj(pa.get(n, True if n in matched else aa), pb.get(n, True if n in matched else ab))
                     for n in [*pa, *(n for n in pb if n not in pa)]}
            out.pop("properties", None)
            out.pop("additionalProperties", None)
            if props:
                out["properties"] = props
            addl = conj(aa, ab)
            if addl not in (True, {}) or any(x.get("additionalProperties") in (True, {}) for x in (a, b)):
                # An explicit `true` stays: the generation default closes objects without one.
                out["additionalProperties"] = addl
            skip = {"properties", "additionalProperties"}
            if one_sided:
                # A key that matches a pattern of one side is additional on the other side,
                # which has no patterns: it passes that pattern's schema and the other side's
                # additionalProperties. Unless the other side declares a name that matches the
                # pattern: that name passes the pattern alone, so the pattern stays as it is.
                rest = ab if with_patterns[0] is a else aa
                patterns = with_patterns[0]["patternProperties"]
                if matched and rest not in (True, {}):
                    self.ctx.approximate("allOf/patternProperties", path,
                                         f"property {sorted(matched)[0]!r} is declared in one branch and matches "
                                         "another branch's patternProperties: keys matching those patterns are not "
                                         "checked against the additionalProperties of the branch without patterns")
                    rest = True
                out["patternProperties"] = {pat: conj(ps, rest) for pat, ps in patterns.items()}
                skip.add("patternProperties")
        for k, v in b.items():
            if k in skip:
                continue
            if k not in out or out[k] == v or k in ANNOTATIONS or (k not in HANDLED and k not in UNSUPPORTED):
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
                out[k] = [x for x in w if any(canon(x) == canon(y) for y in v)]
            elif k in (NOT_IN, NOT_PATTERN, PATTERNS):
                out[k] = sorted(set(w) | set(v))
            elif k == "pattern":
                out[PATTERNS] = sorted({*out.get(PATTERNS, []), v})
            elif k == "const":
                if canon(w) != canon(v) and not (json_type(w) in ("integer", "number") and
                                                 json_type(v) in ("integer", "number") and
                                                 Decimal(str(w)) == Decimal(str(v))):
                    return False
            elif k == "multipleOf" and is_positive_int(w) and is_positive_int(v):
                out[k] = math.lcm(int(w), int(v))
            elif k == "patternProperties" and open_a and open_b:
                # With no additionalProperties on either side, a key must pass every pattern
                # of both sides that it matches: the union of the patterns.
                pats = dict(w)
                for pat, ps in v.items():
                    pats[pat] = conj(pats[pat], ps) if pat in pats else ps
                out[k] = pats
            elif k == "not":
                out[k] = {"anyOf": [w, v]}
            elif k == "allOf":
                out[k] = list(w) + list(v)
            elif k in ("anyOf", "oneOf") and len(w) * len(v) <= limits.MAX_BRANCHES:
                # anyOf(A) and anyOf(B) = anyOf over pairs; likewise for oneOf (exactly one
                # pair matches iff exactly one branch of each side does).
                out[k] = [{"allOf": [x, y]} for x in w for y in v]
            elif k == "anyOf":
                # Too many pairs to spell out here: the lowering takes one anyOf at a time, the
                # others pending in each branch, so unsatisfiable pairs drop out early.
                out[MORE_ANY_OF] = [*out.get(MORE_ANY_OF, []), list(v)]
            elif k == MORE_ANY_OF:
                out[k] = list(w) + list(v)
            elif k in ("items", "propertyNames", "contains") \
                    and isinstance(v, (dict, bool)) and isinstance(w, (dict, bool)):
                out[k] = conj(w, v)
            else:
                self.ctx.unsupported(f"allOf/{k}", path, f"the first value of {k!r} is kept")
        if OPEN in out and any(("properties" in x or "patternProperties" in x) and not x.get(OPEN) for x in (a, b)):
            del out[OPEN]
        return out

    def _pattern_matched_names(self, a: dict[str, Any], b: dict[str, Any], path: tuple[str, ...]) -> set[str]:
        """Of two `merge` sides, one with patternProperties: the names the other side declares (and the
        patterned side does not) that match one of its patterns."""
        with_patterns, other = (a, b) if "patternProperties" in a else (b, a)
        declared = with_patterns.get("properties") or {}
        return {name for name in other.get("properties") or {} if name not in declared
                and any(search_pattern(pat, name, path) for pat in with_patterns["patternProperties"])}

    def flatten(self, schema: Any, path: tuple[str, ...], seen: frozenset[str] = frozenset()) -> Any:
        """Inline `$ref` (with its siblings) and `allOf` into one schema, one level deep."""
        if not isinstance(schema, dict):
            return schema
        self.ctx.enter(path)
        try:
            return self._flatten(schema, path, seen)
        finally:
            self.ctx.leave()

    def _flatten(self, schema: dict[str, Any], path: tuple[str, ...], seen: frozenset[str]) -> Any:
        if "$ref" in schema and isinstance(schema["$ref"], str):
            ref = schema["$ref"]
            if ref in seen:
                raise GrammarError(f"$ref {ref!r} at {pointer(path)} refers to itself without consuming input")
            target = self.refs.resolve(ref, path)
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            if self.refs.old_draft:
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
        return self.desugar(schema, path)

    # ------------------------------------------------------------- logic

    def desugar(self, schema: dict[str, Any], path: tuple[str, ...]) -> Any:
        """Rewrite `not`, `if`/`then`/`else` and dependencies as `anyOf` conjuncts.

        `not S` becomes the positive schema `negate(S)`; `if/then/else` becomes
        `(if ∧ then) ∨ (¬if ∧ else)`; a dependency of property `a` becomes
        `(a absent) ∨ (a present ∧ what it requires)`. Each is merged into the
        schema like an `allOf` member, so the rest of the lowering only sees
        `anyOf`. What cannot be negated stays and is reported by the lowering.
        """
        out = dict(schema)
        if _DESUGARED.isdisjoint(out):
            return out  # most schemas: nothing to rewrite (each step below would leave `out` as it is)
        conjuncts: list[Any] = []
        if "not" in out:
            neg = self.negate(out["not"], path + ("not",))
            if neg is not None:
                del out["not"]
                conjuncts.append(neg)
            elif "enum" in out or "const" in out:
                values = self.values_outside(out, out["not"], path + ("not",))
                if values is not None:
                    del out["not"]
                    out.pop("const", None)
                    out["enum"] = values
        if "if" in out:
            cond, then, else_ = out["if"], out.get("then", True), out.get("else", True)
            # (if ∧ then) ∨ (¬if ∧ else); with `then` absent that is just `if ∨ else`.
            neg_if = self.negate(cond, path + ("if",)) if then not in (True, {}) else True
            if neg_if is not None:
                for k in ("if", "then", "else"):
                    out.pop(k, None)
                if then in (True, {}) and else_ not in (True, {}):
                    conjuncts.append({"anyOf": [cond, else_]})
                elif then not in (True, {}):
                    conjuncts.append({"anyOf": [{"allOf": [cond, then]}, {"allOf": [neg_if, else_]}]})
        else:
            out.pop("then", None)
            out.pop("else", None)
        deps: dict[str, Any] = {}
        for key in ("dependencies", "dependentRequired", "dependentSchemas"):
            if isinstance(out.get(key), dict):
                deps.update({name: dep for name, dep in out[key].items() if dep not in ([], True, {})})
        if len(deps) <= limits.MAX_DEPENDENCIES:
            for key in ("dependencies", "dependentRequired", "dependentSchemas"):
                out.pop(key, None)
            for name, dep in deps.items():
                then = {"required": [name, *dep]} if isinstance(dep, list) else {"allOf": [{"required": [name]}, dep]}
                conjuncts.append({"anyOf": [{"properties": {name: False}, OPEN: True}, then]})
        for c in conjuncts:
            out = self.merge(out, self.flatten(c, path), path)
            if out is False:
                return False
        return out

    def values_outside(self, schema: dict[str, Any], excluded: Any, path: tuple[str, ...]) -> list[Any] | None:
        """The enum/const values of `schema` that are not instances of `excluded` (a `not`
        over a finite set needs no negated schema); None when undecided."""
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        verdicts = self.decide(values, excluded, path)
        return None if verdicts is None else [v for v, hit in zip(values, verdicts) if not hit]

    def negate(self, schema: Any, path: tuple[str, ...], keys: frozenset[str] | None = None) -> Any:
        """A positive schema for the instances `schema` rejects, or None when there is none here.

        With `keys`, only among objects whose property names are all in `keys` (the caller
        conjoins the result with a schema that ensures it): there `additionalProperties` has
        a negation too, "one of the other names in `keys` is present with a value it rejects".

        A schema is the conjunction of its keywords, so its negation is the union
        of each keyword's negation; a keyword only constrains its own type, so its
        negation is "that type, and the constraint fails" (other types are covered
        by the negation of `type`). Exact for type, enum/const, bounds on lengths,
        counts and numbers, required, properties, items, contains, anyOf/oneOf of
        negatable schemas and double negation; None for the rest (patterns,
        formats, multipleOf, uniqueItems, additionalProperties...).
        """
        key = canon(schema)
        if key in self.negating:
            return None  # a recursive schema's negation would be an infinite schema
        self.negating.add(key)
        self.ctx.enter(path)
        try:
            return self._negate(self.flatten(schema, path), path, keys)
        finally:
            self.negating.discard(key)
            self.ctx.leave()

    def _negate(self, schema: Any, path: tuple[str, ...], keys: frozenset[str] | None = None) -> Any:
        if schema is True or schema == {}:
            return False
        if schema is False:
            return True
        if not isinstance(schema, dict):
            return None
        t = schema.get("type")
        types = set(TYPES) if t is None else ({t} if isinstance(t, str) else set(t))
        if schema.get("nullable") is True:
            types.add("null")
        if "number" in types:
            types.add("integer")
        branches: list[Any] = []
        others = [x for x in TYPES if x not in types and not (x == "number" and "integer" in types)]
        if others:
            branches.append({"type": others})
        if "integer" in types and "number" not in types:
            branches.append({"type": "number", NON_INTEGER: True})

        def typed(ty: str, **kw: Any) -> None:
            if ty in types or (ty == "number" and "integer" in types):
                branches.append({"type": ty if ty != "number" or "number" in types else "integer", **kw})

        for k, v in schema.items():
            if k in ("type", "nullable") or k in ANNOTATIONS or (k not in HANDLED and k not in UNSUPPORTED):
                continue
            if k in ("enum", "const"):
                values = [v] if k == "const" else list(v)
                negs = self._negate_values(values, types)
                if negs is None:
                    return None
                branches += negs
                continue
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            flip = {"minLength": ("string", "maxLength", -1), "maxLength": ("string", "minLength", 1),
                    "minItems": ("array", "maxItems", -1), "maxItems": ("array", "minItems", 1),
                    "minProperties": ("object", "maxProperties", -1),
                    "maxProperties": ("object", "minProperties", 1),
                    "minimum": ("number", "exclusiveMaximum", 0), "maximum": ("number", "exclusiveMinimum", 0),
                    "exclusiveMinimum": ("number", "maximum", 0), "exclusiveMaximum": ("number", "minimum", 0)}
            if k in flip and num:
                ty, other, step = flip[k]
                if step < 0 and v <= 0:
                    continue  # minLength: 0 and the like reject nothing
                typed(ty, **{other: v + step})
            elif k == "required" and isinstance(v, list):
                for name in v:
                    typed("object", properties={name: False}, **{OPEN: True})
            elif k == "properties" and isinstance(v, dict):
                for name, sub in v.items():
                    neg = self.negate(sub, path + ("properties", name))
                    if neg is None:
                        return None
                    if neg is not False:
                        typed("object", required=[name], properties={name: neg}, **{OPEN: True})
            elif k == "items" and isinstance(v, (dict, bool)) and "prefixItems" not in schema:
                neg = self.negate(v, path + ("items",))
                if neg is None:
                    return None
                if neg is not False:
                    typed("array", contains=neg)
            elif k == "contains" and "minContains" not in schema and "maxContains" not in schema:
                neg = self.negate(v, path + ("contains",))
                if neg is None:
                    return None
                typed("array", items=neg)
            elif k in ("anyOf", "oneOf") and isinstance(v, list):
                if k == "oneOf" and not self.disjoint([self.flatten(b, path) for b in v]):
                    return None
                negs = [self.negate(b, path + (k, str(i)), keys) for i, b in enumerate(v)]
                if any(n is None for n in negs):
                    return None
                branches.append({"allOf": negs})
            elif k == "not":
                branches.append(v)
            elif k == "additionalProperties" and keys is not None and "patternProperties" not in schema:
                neg = True if v is False else self.negate(v, path + (k,))
                if neg is None:
                    return None
                if neg is not False:
                    for name in sorted(keys - set(schema.get("properties") or {})):
                        typed("object", required=[name], properties={name: neg}, **{OPEN: True})
            elif k == MORE_ANY_OF:
                for group in v:
                    negs = [self.negate(b, path, keys) for b in group]
                    if any(n is None for n in negs):
                        return None
                    branches.append({"allOf": negs})
            elif k == NOT_IN:
                typed("string", enum=list(v))
            elif k == "pattern" and isinstance(v, str):
                typed("string", **{NOT_PATTERN: [v]})
            elif k == "format" and v in FORMATS:
                typed("string", **{NOT_PATTERN: [format_pattern(self.ctx.formats[v])]})
            elif k == NOT_PATTERN or k == PATTERNS:
                for p in v:
                    typed("string", **({"pattern": p} if k == NOT_PATTERN else {NOT_PATTERN: [p]}))
            elif k == NON_INTEGER:
                typed("integer")
            elif k == OPEN:
                continue
            elif k == "uniqueItems" and v is False or k == "format":
                continue
            elif k in ("minContains", "maxContains", "additionalItems") and "contains" not in schema:
                continue
            else:
                return None
        return {"anyOf": branches} if branches else False

    def _negate_values(self, values: list[Any], types: set[str]) -> list[Any] | None:
        """Instances of `types` that are none of `values` (objects and arrays: not negatable)."""
        out: list[Any] = []
        listed = {canon(v) for v in values}
        if "null" in types and None not in values:
            out.append({"type": "null"})
        if "boolean" in types:
            left = [b for b in (True, False) if canon(b) not in listed]
            if left:
                out.append({"enum": left})
        if "string" in types:
            out.append({"type": "string", NOT_IN: sorted({v for v in values if isinstance(v, str)})})
        nums = sorted({Decimal(str(v)) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)})
        if "integer" in types or "number" in types:
            ty = "number" if "number" in types else "integer"
            bounds = [None, *nums, None]
            for lo, hi in zip(bounds, bounds[1:]):
                b: dict[str, Any] = {"type": ty}
                if lo is not None:
                    b["exclusiveMinimum"] = json_number(lo)
                if hi is not None:
                    b["exclusiveMaximum"] = json_number(hi)
                out.append(b)
        for ty in ("object", "array"):
            if ty in types:
                if any(json_type(v) == ty for v in values):
                    return None
                out.append({"type": ty})
        return out

    def exactly_one(self, rest: Any, branches: list[Any], path: tuple[str, ...]) -> list[Any] | None:
        """`rest` with `oneOf: branches`, exactly, as a list of flattened schemas whose union it is, or
        None when a branch has no negation here or the union would pass `MAX_BRANCHES` members.

        oneOf[B1..Bk] is anyOf over i of allOf[Bi, not Bj for every j != i]. Each negation is
        a union itself (`negate`), so the conjunction is multiplied out one negation at a time,
        dropping products of disjoint types, to keep the count honest. Nothing is emitted into
        the grammar here (the lowering tries it, `Lowering.exactly_one`)."""
        negs: dict[tuple[int, frozenset[str] | None], Any] = {}
        out: list[Any] = []
        for i, b in enumerate(branches):
            sub = path + ("oneOf", str(i))
            conjuncts = [self.flatten(self.merge(rest, self.flatten(b, sub), path), sub)]
            keys = closed_keys(conjuncts[0])
            for j in range(len(branches)):
                if j == i:
                    continue
                if (j, keys) not in negs:
                    negs[(j, keys)] = self.negate(branches[j], path + ("oneOf", str(j)), keys)
                neg = negs[(j, keys)]
                if neg is None:
                    return None
                if neg is True or neg == {}:
                    continue
                parts = neg["anyOf"] if isinstance(neg, dict) and set(neg) == {"anyOf"} else [neg]
                nxt = []
                for c in conjuncts:
                    for part in parts:
                        m = self.flatten(self.merge(c, self.flatten(part, sub), sub), sub)
                        if m is not False and not (isinstance(m, dict) and m.get("type") == []):
                            nxt.append(m)
                        if len(out) + len(nxt) > limits.MAX_BRANCHES:
                            return None
                conjuncts = nxt
                if not conjuncts:
                    break
            out += conjuncts
        return out

    # ---------------------------------------------------------- disjoint branches

    def disjoint(self, branches: list[Any]) -> bool:
        """True when no instance can satisfy two branches (checked on types, consts, enums)."""
        def types(b: Any) -> set[str]:
            if not isinstance(b, dict):
                return set(TYPES) if b is not False else set()
            if "const" in b:
                return {json_type(b["const"])}
            if "enum" in b:
                return {json_type(v) for v in b["enum"]}
            t = b.get("type")
            if t is None:
                return set(TYPES)
            ts = {t} if isinstance(t, str) else set(t)
            return ts | ({"integer"} if "number" in ts else set())

        def values(b: Any) -> set[str] | None:
            if isinstance(b, dict) and "const" in b:
                return {canon(b["const"])}
            if isinstance(b, dict) and "enum" in b:
                return {canon(v) for v in b["enum"]}
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


def closed_keys(schema: Any) -> frozenset[str] | None:
    """The only property names an object instance of `schema` may have (`additionalProperties:
    false`, no patterns), or None when any name may occur."""
    if isinstance(schema, dict) and schema.get("additionalProperties") is False \
            and not schema.get("patternProperties"):
        return frozenset(schema.get("properties") or {})
    return None


def conj(a: Any, b: Any) -> Any:
    """Both schemas, as an `allOf` lowered (and memoised) when it is used: merging
    eagerly would not terminate on recursive schemas."""
    if a is True or a == {} or canon(a) == canon(b):
        return b
    if b is True or b == {}:
        return a
    if a is False or b is False:
        return False
    return {"allOf": [a, b]}
