"""The lowering itself: a schema's instances as rules, by type, through the parts of this package.

`Lowering.value` is the recursion: a subschema (memoised by its content, `schema_key`;
its rule reserved first so recursive schemas terminate) is normalised
(`Normaliser.flatten`), split over `anyOf`/`oneOf` into branches, and each branch
dispatched by type to `numbers`, `strings` or `containers` (`typed`); `enum` and
`const` are literal terminals here, checked against their sibling keywords
(`checks`, or `values_verdicts`: the values parsed with an exact lowering of the
siblings, or checked against them where `instances` decides them). The rules and
terminals accumulate in the context's `GrammarBuilder`; `lower` runs a whole
lowering (validation first, exact decimals throughout) and `ir`/`lark` write its
grammar.

Layout of the output: JSON structure (objects, arrays, members, repetition) is
rules; every scalar (a string with its pattern/format/length, a number with its
bounds, a property name, a literal) is one terminal; white space is an optional
`WS` terminal between tokens (none when compact).
"""

from __future__ import annotations

import decimal
import json
import warnings
from decimal import Decimal
from typing import Any

from pda.errors import GrammarError, PdaError
from pda.grammar import ecma_regex as er
from pda.grammar.ir import GrammarIR
from pda.grammar.json_schema import limits
from pda.grammar.json_schema.checks import const_satisfies
from pda.grammar.json_schema.containers import Containers
from pda.grammar.json_schema.context import Context, JsonSchemaWarning
from pda.grammar.json_schema.instances import direct_verdicts
from pda.grammar.json_schema.keywords import (
    ANNOTATIONS, KEYWORD_TYPE, MORE_ANY_OF, SCALAR_CHECKS, TYPES, UNSUPPORTED, canon, json_type, pointer, schema_key,
)
from pda.grammar.json_schema.normalise import Normaliser
from pda.grammar.json_schema.numbers import any_number_regex, lower_number, number_literal_regex
from pda.grammar.json_schema.options import Options
from pda.grammar.json_schema.refs import References
from pda.grammar.json_schema.strings import define_long_strings, lower_string, string_set
from pda.grammar.json_schema.validate import validate

# Per schema (`schema_key`): the exact grammar that decides values against it, and whether
# that grammar holds an object bound to schema order; None when it cannot decide.
Checkers = dict["bytes | str", "tuple[Any, bool] | None"]
# The keywords `typed` never reads: the unions `_value` takes apart, and what `flatten` left of negations.
_NOT_BASE = frozenset({"anyOf", "oneOf", "not", "if", "then", "else"})
_EMPTY = "\x00empty"  # `exactly_one`'s answer for a oneOf that no instance satisfies


class Lowering:
    """One schema's lowering: rules and terminals accumulate in `ctx.builder` as subschemas are visited."""

    def __init__(self, refs: References, options: Options, checkers: Checkers | None = None) -> None:
        self.refs = refs
        self.ctx = Context(options)
        self.builder = self.ctx.builder
        self.normal = Normaliser(self.ctx, refs, self.values_verdicts)
        self.containers = Containers(self.ctx, self.normal, self.value)
        self.memo: dict[bytes | str, str | None] = {}  # subschema (`schema_key`) -> its rule
        self.used: set[str] = set()  # rules used while still being lowered (recursion)
        # Exact lowerings of subschemas that enum values are checked against, by schema.
        self.checkers: Checkers = {} if checkers is None else checkers
        self._any: str | None = None
        self.top: str | None = None

    def value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        """The rule for instances of `schema`; None when no instance exists."""
        self.ctx.enter(path)
        try:
            return self._memo_value(schema, path)
        finally:
            self.ctx.leave()

    def _memo_value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        if schema is True or schema == {}:
            return self.any_value()
        if schema is False:
            return None
        if not isinstance(schema, dict):
            raise GrammarError(f"schema at {pointer(path)} must be an object or a boolean")
        key = schema_key(schema)
        if key in self.memo:
            name = self.memo[key]
            if name is not None and self.builder.rules.get(name) == []:
                self.used.add(name)  # a recursive use of a schema still being lowered
            return name
        if len(self.memo) >= limits.MAX_SUBSCHEMAS:
            raise GrammarError(f"schema at {pointer(path)}: the lowering reached {limits.MAX_SUBSCHEMAS} distinct "
                               "subschemas (combinations of anyOf branches under allOf); it is too large")
        # Reserve the rule first so recursive schemas terminate.
        name = self.builder.reserve()
        self.memo[key] = name
        if "$ref" in schema and set(schema) <= {"$ref"} | ANNOTATIONS:
            body = self.value(self.normal.flatten(self.refs.resolve(schema["$ref"], path), path), path)
        else:
            body = self._value(self.normal.flatten(schema, path), path)
        if body is None:
            if name in self.used:
                raise GrammarError(f"schema at {pointer(path)} is recursive and unsatisfiable")
            self.builder.discard(name)
            self.memo[key] = None
            return None
        if name not in self.used:
            # No recursive use named it: the schema's symbol is its body's, with no unit rule between.
            self.builder.discard(name)
            self.memo[key] = body
            return body
        self.builder.define(name, [[body]])
        return name

    def _value(self, schema: Any, path: tuple[str, ...]) -> str | None:
        if not isinstance(schema, dict):
            return self.value(schema, path)
        if not UNSUPPORTED.isdisjoint(schema):
            for k in schema:
                if k in UNSUPPORTED:
                    self.ctx.unsupported(k, path + (k,), f"{k!r} is ignored (the grammar accepts more)")
        # `flatten` has rewritten every `not`, `if` and dependency it could negate.
        if "not" in schema:
            self.ctx.unsupported("not", path + ("not",), "'not' is ignored (the grammar accepts more)")
        if "if" in schema:
            self.ctx.unsupported("if", path + ("if",), "'if'/'then'/'else' are ignored (the grammar accepts more)")
        if "anyOf" not in schema and "oneOf" not in schema and schema.get(MORE_ANY_OF):
            first, *pending = schema[MORE_ANY_OF]
            schema = {k: v for k, v in schema.items() if k != MORE_ANY_OF} | {"anyOf": first}
            if pending:
                schema[MORE_ANY_OF] = pending
        base = schema if _NOT_BASE.isdisjoint(schema) else {k: v for k, v in schema.items() if k not in _NOT_BASE}
        for comb in ("anyOf", "oneOf"):
            if comb in schema:
                rest = {k: v for k, v in schema.items() if k != comb}
                branches = [self.normal.flatten(self.normal.merge(rest, self.normal.flatten(b, path + (comb, str(i))),
                                                                  path),
                                                path + (comb, str(i)))
                            for i, b in enumerate(schema[comb])]
                if comb == "oneOf" and not self.normal.disjoint(branches):
                    exact = self.exactly_one(rest, schema[comb], path) if self.ctx.exact else None
                    if exact is not None:
                        return None if exact == _EMPTY else exact
                    self.ctx.approximate("oneOf", path + ("oneOf",),
                                         "branches may overlap; matched as anyOf (an instance valid "
                                         "against several branches is accepted)"
                                         + ("" if self.ctx.exact else "; exact only with exact=True"))
                alts = [self.value(b, path + (comb, str(i))) for i, b in enumerate(branches)]
                return self.union(alts)
        return self.typed(base, path)

    def union(self, symbols: list[str | None]) -> str | None:
        """The symbol for any one of `symbols` (None ones left out): the one symbol itself when it is
        the only one (a terminal included: no unit rule for the parser to step through), else a rule of
        one alternative each; None when there is none."""
        present = [s for s in symbols if s is not None]
        if len(present) == 1:
            return present[0]
        return self.builder.rule([[s] for s in present])

    def exactly_one(self, rest: dict[str, Any], branches: list[Any], path: tuple[str, ...]) -> str | None:
        """`rest` with an overlapping `oneOf: branches`, exactly (`Normaliser.exactly_one`), or None
        when that cannot be built here: a branch has no negation, the products pass
        `MAX_BRANCHES`, or their lowering raises (an unsupported keyword with
        `on_unsupported="raise"`, a budget). Tried on a copy of the lowering's state, which an
        abandoned attempt leaves as it was, its warnings dropped; a kept one's warnings are
        emitted (they name what its parts approximate)."""
        builder = {k: v.copy() if isinstance(v, (dict, list, set)) else v for k, v in vars(self.builder).items()}
        saved = (dict(self.memo), set(self.used), self._any, dict(self.ctx.long_strings),
                 self.ctx.order_bound, self.ctx.steps)
        out: str | None = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                parts = self.normal.exactly_one(rest, branches, path)
                if parts is not None:
                    alts = [self.value(b, path + ("oneOf",)) for b in parts]
                    out = self.union(alts) or _EMPTY
            except GrammarError:
                out = None
        if out is None:
            vars(self.builder).update(builder)
            self.memo, self.used, self._any = saved[0], saved[1], saved[2]
            self.ctx.long_strings, self.ctx.order_bound, self.ctx.steps = saved[3:]
            return None
        for w in caught:
            warnings.warn(w.message, w.category, stacklevel=2)
        return out

    def typed(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        """A normalised schema without unions: its enum/const, or one alternative per type it allows."""
        t = schema.get("type")
        types = set(TYPES) if t is None else ({t} if isinstance(t, str) else set(t))
        if schema.get("nullable") is True:
            types.add("null")
        for x in types:
            if x not in TYPES:
                raise GrammarError(f"unknown type {x!r} at {pointer(path + ('type',))}")
        if "const" in schema or "enum" in schema:
            return self.enum(schema, types, path)
        if "number" in types:
            types.discard("integer")
        alts: list[list[str]] = []
        for ty in TYPES:
            if ty not in types:
                continue
            sym: str | None
            if ty == "null":
                sym = self.ctx.literal("null")
            elif ty == "boolean":
                sym = self.builder.rule([[self.ctx.literal("true")], [self.ctx.literal("false")]])
            elif ty in ("integer", "number"):
                sym = lower_number(self.ctx, schema, ty == "integer", path)
            elif ty == "string":
                sym = lower_string(self.ctx, schema, path)
            elif ty == "array":
                sym = self.containers.array(schema, path)
            else:
                sym = self.containers.object(schema, path)
            if sym is not None:
                alts.append([sym])
        return self.union([a[0] for a in alts])

    # ---------------------------------------------------------------- enum

    def enum(self, schema: dict[str, Any], types: set[str], path: tuple[str, ...]) -> str | None:
        """The values of `enum`/`const` that are of `types` and pass the sibling keywords, as literals
        (the strings among them one terminal, `strings.string_set`)."""
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        if "const" in schema and "enum" in schema:
            values = [v for v in values if any(canon(v) == canon(e) for e in schema["enum"])]
        rest = {k: v for k, v in schema.items()
                if k not in ("const", "enum", "type", "nullable") and k not in ANNOTATIONS}
        values = [v for v in values if json_type(v) in types or (json_type(v) == "integer" and "number" in types)]
        present = {json_type(v) for v in values}
        rest = {k: v for k, v in rest.items() if k not in KEYWORD_TYPE or KEYWORD_TYPE[k] & present}
        if set(rest) - SCALAR_CHECKS:
            # Keywords the scalar check does not read (items, properties, multipleOf, format...):
            # each value is parsed with the sibling keywords' own lowering.
            verdicts = self.values_verdicts(values, rest, path)
            if verdicts is None:
                self.ctx.unsupported("enum", path + ("enum" if "enum" in schema else "const",),
                                     "the sibling keywords of 'enum'/'const' are not all checked")
            else:
                values, rest = [v for v, ok in zip(values, verdicts) if ok], {}
        alts = []
        strings: list[str] = []
        for v in values:
            if rest and not const_satisfies(v, rest, self.ctx.formats):
                continue
            if isinstance(v, str):
                strings.append(v)
            else:
                alts.append([self.const(v)])
        if strings:
            alts.append([string_set(self.ctx, strings)])
        return self.union([a[0] for a in alts])

    def const(self, v: Any) -> str:
        """The symbol for exactly the JSON value `v` (every spelling of a number under `exact`)."""
        if v is None or isinstance(v, bool):
            return self.ctx.literal(json.dumps(v))
        if isinstance(v, (int, float)):
            return self.builder.terminal(number_literal_regex(Decimal(str(v)), self.ctx.exact), "NUM")
        if isinstance(v, str):
            return self.builder.terminal(er.literal_string_regex(v), "STR")
        ws = self.ctx.ws
        if isinstance(v, list):
            if not v:
                return self.builder.rule([[self.ctx.literal("["), *ws, self.ctx.literal("]")]]) or ""
            seq = [self.ctx.literal("["), *ws]
            for i, x in enumerate(v):
                if i:
                    seq += [*ws, self.ctx.literal(","), *ws]
                seq.append(self.const(x))
            return self.builder.rule([seq + [*ws, self.ctx.literal("]")]]) or ""
        if not v:
            return self.builder.rule([[self.ctx.literal("{"), *ws, self.ctx.literal("}")]]) or ""
        seq = [self.ctx.literal("{"), *ws]
        for i, (k, x) in enumerate(v.items()):
            if i:
                seq += [*ws, self.ctx.literal(","), *ws]
            key = self.builder.terminal(er.literal_string_regex(k), "KEY")
            seq += [key, *ws, self.ctx.literal(":"), *ws, self.const(x)]
        return self.builder.rule([seq + [*ws, self.ctx.literal("}")]]) or ""

    # ------------------------------------------------------------- any value

    def any_value(self) -> str:
        """The rule for any JSON value (the schema `true`), built once per lowering."""
        if self._any is not None:
            return self._any
        name = self._any = self.builder.reserve()
        ws, comma, colon = self.ctx.ws, self.ctx.literal(","), self.ctx.literal(":")
        string = self.builder.terminal(f'"(?:{er.ANY_UNIT})*"', "STR")
        member = self.builder.rule([[string, *ws, colon, *ws, name]]) or ""
        sep_member = self.builder.rule([[*ws, comma, *ws, member]]) or ""
        sep_value = self.builder.rule([[*ws, comma, *ws, name]]) or ""
        open_obj, close_obj = self.ctx.literal("{"), self.ctx.literal("}")
        obj = self.builder.rule([[open_obj, *ws, close_obj],
                                 [open_obj, *ws, member, *self.builder.repeat(sep_member, 0, None), *ws, close_obj]])
        open_arr, close_arr = self.ctx.literal("["), self.ctx.literal("]")
        arr = self.builder.rule([[open_arr, *ws, close_arr],
                                 [open_arr, *ws, name, *self.builder.repeat(sep_value, 0, None), *ws, close_arr]])
        scalars = [self.ctx.literal("null"), self.ctx.literal("true"), self.ctx.literal("false"),
                   self.builder.terminal(any_number_regex(self.ctx.exact), "NUM"), string]
        self.builder.define(name, [[s] for s in scalars] + [[obj or ""], [arr or ""]])
        return name

    # -------------------------------------------------- values decided by parsing

    def values_verdicts(self, values: list[Any], schema: Any, path: tuple[str, ...]) -> list[bool] | None:
        """Whether each value is an instance of `schema`, decided by parsing it with the
        schema's own exact lowering (memoised per schema), or directly where the schema's
        keywords allow (`instances`); None when that lowering approximates something, or
        refuses a value where the refusal may be the documented property-order restriction."""
        key = schema_key(schema)
        if key not in self.checkers:
            checker = Lowering(self.refs, Options("compact", 1, "raise", "any", exact=True), self.checkers)
            checker.ctx.depth, checker.ctx.steps = self.ctx.depth, self.ctx.steps
            found: tuple[Any, bool] | None = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", JsonSchemaWarning)
                    checker.top = checker.value(schema, path)
                define_long_strings(checker.ctx, checker.top, check=False)
                checker.unlink()
                from pda.grammar.grammar import Grammar

                found = (None if checker.top is None else Grammar(checker.ir()), checker.ctx.order_bound)
            except (PdaError, JsonSchemaWarning):
                pass
            self.ctx.steps = checker.ctx.steps
            self.checkers[key] = found
        found = self.checkers[key]
        if found is None:
            return None
        grammar, order_bound = found
        if grammar is None:
            return [False] * len(values)
        # The lowering above still runs: it says whether the grammar is exact, and spends the steps budget.
        verdicts = direct_verdicts(values, schema)
        if verdicts is None:
            try:
                verdicts = [grammar.accepts(json.dumps(v, separators=(",", ":"), ensure_ascii=False)) for v in values]
            except PdaError:
                return None
        return None if order_bound and not all(verdicts) else verdicts

    def build(self) -> None:
        """Lower the root schema (rules and terminals accumulate in the builder), define its long
        strings, then `unlink`."""
        top = self.top = self.value(self.refs.root, ())
        if top is None:
            raise GrammarError("the schema accepts no JSON value")
        define_long_strings(self.ctx, top)
        if not all(self.builder.rules.values()):  # every rule has alternatives (in C; the loop names the culprit)
            for name, alts in self.builder.rules.items():
                if not alts:
                    raise GrammarError(f"internal: rule {name} has no alternatives")
        self.unlink()

    def unlink(self) -> None:
        """Drop the normaliser and the container lowerings, which call back into this lowering (its
        `values_verdicts`, its `value`): without them it is no reference cycle, so it is freed as
        soon as it is dropped, not by the cyclic collector, which would first traverse all of it
        (traefik-v2's builder alone is ~6,700 objects). Only its grammar (`ir`, `lark`) is read after."""
        del self.normal, self.containers

    def start(self) -> list[str]:
        """The start rule's one alternative: the top value between optional white space."""
        return [*self.ctx.ws, self.top or "", *self.ctx.ws]

    def lark(self) -> str:
        """The lowered grammar as Lark text."""
        return self.builder.lark(self.start())

    def ir(self) -> GrammarIR:
        """The lowered grammar as pda's IR, built directly: Lark's grammar loader spends
        seconds parsing the generated text of a large schema (and ~50 s on a
        100,000-value enum terminal)."""
        return self.builder.ir([self.start()], source="<json-schema>")


def lower(schema: dict[str, Any] | bool | str, options: Options) -> Lowering:
    """A whole lowering of a schema (a dict, a boolean, or JSON text), built; GrammarError when malformed."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise GrammarError(f"schema is not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
        except RecursionError:
            raise GrammarError(f"schema text nests deeper than MAX_JSON_DEPTH = {limits.MAX_JSON_DEPTH}") from None
    names = validate(schema)
    # Bounds and multiples are exact decimals: enough precision for every integer a schema
    # may hold (`MAX_NUMBER_DIGITS`) divided by the smallest float.
    with decimal.localcontext(decimal.Context(prec=4 * limits.MAX_NUMBER_DIGITS)):
        lowering = Lowering(References(schema, names=names), options)
        lowering.build()
        return lowering
