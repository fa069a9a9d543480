"""Lowering `array` and `object` schemas: rules over their members' values, lowered through the caller.

Arrays: prefix items, then the rest, counted in O(log) rules (`minItems`,
`maxItems`); `contains` as "some item is a hit". Objects: each declared property
is a member rule (key terminal, colon, value); `patternProperties`,
`additionalProperties` and `propertyNames` add extra members whose key terminals
exclude each other exactly (`_exact_keys`) or, past the automata's limits, are
ranked by priority (declared > pattern > additional). Small objects take their
declared properties in any order (`members_any_order`: 2^n states); larger ones
take them in schema order, or under `exact=True` in any order with only the
required ones tracked (`members_required_tracked`). The values inside are lowered
by the caller's `value` (a recursion this module does not own), and subschemas are
normalised by the lowering's `Normaliser`. Each lowering reads its schema once,
through its typed view (`typed.ArraySchema`, `typed.ObjectSchema`: defaults, draft
forms and the internal keywords already folded), never the container's dictionary;
only the values an item or property-name schema lists (`enum`, `const`) are read
from theirs.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any, Callable

from pda.errors import GrammarError, RegexError
from pda.grammar import ecma_regex as er
from pda.grammar.ir import TerminalAutomaton
from pda.grammar.json_schema import limits
from pda.grammar.json_schema.checks import const_satisfies
from pda.grammar.json_schema.context import Context
from pda.grammar.json_schema.keywords import canon, pointer
from pda.grammar.json_schema.normalise import Normaliser, conj, search_pattern
from pda.grammar.json_schema.strings import not_in_set
from pda.grammar.json_schema.typed import ArraySchema, ObjectSchema

# Property-name terminal priorities: when one key lexeme matches several candidate
# terminals, pda's lexer hands the parser only the highest-priority ones, so a
# declared name beats a patternProperties pattern, which beats additionalProperties.
_DECLARED_KEY, _PATTERN_KEY, _ADDITIONAL_KEY = 3, 2, 1
_OTHER_KEYS = "\x00other"  # `_exact_keys`' entry for keys that match no pattern and no name

# The rule for instances of a subschema at a path (None: it has none): the lowering's recursion.
LowerValue = Callable[[Any, tuple[str, ...]], "str | None"]


# The most members whose `_any_order_plan` is memoised: 2^10 states, ~100 kB; `MAX_ANY_ORDER_PROPERTIES`
# may be raised past it, and a plan of 20 members would be ~100 MB held for the process.
_PLAN_MEMO_MAX_MEMBERS = 10


def _any_order_plan(n: int, extra: bool) -> tuple[tuple[int, bool, tuple[tuple[int, int], ...], int | None], ...]:
    """`_plan`, memoised up to `_PLAN_MEMO_MAX_MEMBERS` members."""
    return _memo_plan(n, extra) if n <= _PLAN_MEMO_MAX_MEMBERS else _plan(n, extra)


@functools.lru_cache(maxsize=2 * (_PLAN_MEMO_MAX_MEMBERS + 1))
def _memo_plan(n: int, extra: bool) -> tuple[tuple[int, bool, tuple[tuple[int, int], ...], int | None], ...]:
    return _plan(n, extra)


def _plan(n: int, extra: bool) -> tuple[tuple[int, bool, tuple[tuple[int, int], ...], int | None], ...]:
    """The states of `Containers.members_any_order` for n present members (and an extra member or not),
    in the order their rules are named: per state (the members written, as bits; started; per member
    not yet written, (its index, the position of the state after it); the position of the state after
    an extra member, or None). The order is a depth-first recursion's from (nothing written, not
    started), successors in member order then the extra member's: it depends on n and `extra` only,
    so it is worked out once, not walked again per object: 1.4-1.7x faster for 4-6 members."""
    position: dict[int, int] = {}  # by written * 2 + started
    stack = [0]
    while stack:
        key = stack.pop()
        if key in position:
            continue
        position[key] = len(position)
        written = key >> 1
        after = [(written | 1 << j) * 2 + 1 for j in range(n) if not written >> j & 1]
        if extra:
            after.append(written * 2 + 1)
        stack.extend(reversed(after))
    return tuple((key >> 1, bool(key & 1),
                  tuple((j, position[(key >> 1 | 1 << j) * 2 + 1]) for j in range(n) if not key >> 1 >> j & 1),
                  position[key | 1] if extra else None)
                 for key in position)


class Containers:
    """The array and object lowerings of one lowering (its context, its normaliser, its `value`)."""

    def __init__(self, ctx: Context, normal: Normaliser, value: LowerValue) -> None:
        self.ctx = ctx
        self.builder = ctx.builder
        self.normal = normal
        self.value = value

    def array(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        array = ArraySchema.of(schema)
        prefix, items, contains = array.prefix_items, array.items, array.contains
        lo, hi = array.min_items, array.max_items
        ws, comma = self.ctx.ws, self.ctx.literal(",")
        open_, close = self.ctx.literal("["), self.ctx.literal("]")
        if array.unique_items:
            values = None if prefix or contains is not None else self._finite_values(items, path + ("items",))
            if values is not None and len(values) <= limits.MAX_UNIQUE_VALUES:
                return self.unique_array(values, lo, hi)
            self.ctx.approximate("uniqueItems", path + ("uniqueItems",),
                                 "not expressible by a grammar (items of more than MAX_UNIQUE_VALUES = "
                                 f"{limits.MAX_UNIQUE_VALUES} possible values); duplicate items are accepted")
        psyms = [self.value(p, path + ("prefixItems", str(i))) for i, p in enumerate(prefix)]
        rest = self.value(items, path + ("items",))
        if contains is not None:
            if prefix or lo > 1 or hi is not None or array.min_contains != 1 or array.max_contains is not None:
                self.ctx.unsupported("contains", path + ("contains",),
                                     "'contains' is ignored with prefixItems, item counts or min/maxContains")
            else:
                hits = self.normal.merge(self.normal.flatten(items, path), self.normal.flatten(contains, path), path)
                hit = self.value(hits, path + ("contains",))
                if hit is None:
                    return None
                sep_rest = self.builder.rule([[*ws, comma, *ws, rest]]) if rest else None
                sep_hit = self.builder.rule([[*ws, comma, *ws, hit]]) or ""
                before = [rest, *self.builder.repeat(sep_rest, 0, None)] if sep_rest and rest else None
                after = self.builder.repeat(sep_rest, 0, None) if sep_rest else []
                alts = [[hit, *after]]
                if before:
                    alts.append([*before, sep_hit, *after])
                body = self.builder.rule(alts)
                return self.builder.rule([[open_, *ws, body or "", *ws, close]])
        # chain(j): what may follow once j >= 1 items are written.
        k = len(prefix)
        sep_rest = self.builder.rule([[*ws, comma, *ws, rest]]) if rest is not None else None
        chain: str | None = None
        if k:
            if sep_rest is not None and (hi is None or hi > k):
                chain = self.builder.rule([self.builder.repeat(sep_rest, max(lo - k, 0),
                                                               None if hi is None else hi - k)])
            elif lo <= k:
                chain = self.builder.rule([[]])
            for j in range(k - 1, 0, -1):
                options: list[list[str]] = []
                if lo <= j:
                    options.append([])
                if psyms[j] is not None and chain is not None and (hi is None or j + 1 <= hi):
                    options.append([*ws, comma, *ws, psyms[j], chain])
                chain = self.builder.rule(options)
            body = self.builder.rule([[psyms[0], chain]]) if psyms[0] is not None and chain is not None else None
        elif rest is not None and sep_rest is not None and (hi is None or hi >= 1):
            body = self.builder.rule([[rest, *self.builder.repeat(sep_rest, max(lo - 1, 0),
                                                                  None if hi is None else hi - 1)]])
        else:
            body = None
        if hi is not None and hi == 0:
            body = None
        alts: list[list[str]] = []
        if lo == 0:
            alts.append([open_, *ws, close])
        if body is not None:
            alts.append([open_, *ws, body, *ws, close])
        return self.builder.rule(alts)

    def _finite_values(self, items: Any, path: tuple[str, ...]) -> list[str] | None:
        """The symbols of an item schema's values, one per distinct JSON value, when it has a few
        scalar ones (`enum`, `const`, boolean, null); None otherwise."""
        flat = self.normal.flatten(items, path)
        if flat is False:
            return []
        if not isinstance(flat, dict) or "anyOf" in flat or "oneOf" in flat:
            return None
        if "const" in flat or "enum" in flat:
            values = [flat["const"]] if "const" in flat else list(flat["enum"])
        elif flat.get("type") in ("boolean", "null", ["boolean", "null"], ["null", "boolean"]):
            t = flat["type"]
            values = ([True, False] if "boolean" in t else []) + ([None] if "null" in t else [])
        else:
            return None
        if len(values) > 4 * limits.MAX_UNIQUE_VALUES or any(isinstance(v, (list, dict)) for v in values):
            return None
        distinct: dict[Any, Any] = {}
        for v in values:
            # 1 and 1.0 are one value (one symbol takes every spelling of it under exact=True).
            key = ("n", Decimal(str(v))) if isinstance(v, (int, float)) and not isinstance(v, bool) else canon(v)
            distinct.setdefault(key, v)
        syms = [self.value(self.normal.merge(flat, {"const": v}, path), path) for v in distinct.values()]
        return [s for s in syms if s is not None]

    def unique_array(self, values: list[str], lo: int, hi: int | None) -> str | None:
        """An array of distinct items out of a few values (`uniqueItems` over `MAX_UNIQUE_VALUES` or
        fewer): one rule per non-empty set of values already written, 2^k - 1 of them; its
        size is the item count, so `minItems`/`maxItems` are read off it."""
        ws, comma = self.ctx.ws, self.ctx.literal(",")
        open_, close = self.ctx.literal("["), self.ctx.literal("]")
        k = len(values)
        hi = k if hi is None else min(hi, k)
        if lo > hi:
            return None
        states: dict[int, str] = {}
        for seen in sorted(range(1, 1 << k), key=lambda m: -bin(m).count("1")):
            size = bin(seen).count("1")
            if size > hi:
                continue
            alts = [[*ws, comma, *ws, values[j], states[seen | 1 << j]]
                    for j in range(k) if not seen >> j & 1 and size < hi]
            if size >= lo:
                alts.append([])
            states[seen] = self.builder.reserve()
            self.builder.define(states[seen], alts)
        alts = [[open_, *ws, values[j], states[1 << j], *ws, close] for j in range(k) if hi >= 1]
        if lo == 0:
            alts.append([open_, *ws, close])
        return self.builder.rule(alts)

    # --------------------------------------------------------------- objects

    def object(self, schema: dict[str, Any], path: tuple[str, ...]) -> str | None:
        obj = ObjectSchema.of(schema)
        props: dict[str, Any] = dict(obj.properties)
        required = obj.required
        addl = obj.additional_properties
        # Keys outside `properties`/`patternProperties`/`required`: the generation default
        # allows them only where the schema says so (`ObjectSchema.closed_by_default`).
        extra_schema = False if obj.closed_by_default and not self.ctx.exact else addl
        patterns: dict[str, Any] = dict(obj.pattern_properties)
        names_schema = obj.property_names
        min_p, max_p = obj.min_properties, obj.max_properties
        ws, comma, colon = self.ctx.ws, self.ctx.literal(","), self.ctx.literal(":")
        # Required names without a declared schema are declared with the extras' schema.
        for r in required:
            if r not in props:
                matching = [s for p, s in patterns.items() if search_pattern(p, r, path)]
                props[r] = matching[0] if len(matching) == 1 else {"allOf": matching} if matching else addl
        names = list(props)
        if names_schema not in (True, {}):
            ns = self.normal.flatten(names_schema, path + ("propertyNames",))
            for n in names:
                if not self._name_ok(n, ns, path):
                    props[n] = False
            allowed = self._finite_names(ns, path)
            if allowed is not None:
                # A finite set of names: each is declared with what applies to it (its declared
                # schema, the patterns it matches, else the extras' schema), and no other key is
                # allowed. Exact, and no key terminal needs a priority.
                for n in [*names, *(n for n in allowed if n not in props)]:
                    matching = [ps for pat, ps in patterns.items() if search_pattern(pat, n, path)]
                    sub = props.get(n, True if matching else extra_schema)
                    for ps in matching:
                        sub = conj(sub, ps)
                    props[n] = sub if n in allowed else False
                names, patterns, extra_schema, names_schema = list(props), {}, False, True
        trivial = extra_schema in (True, {}) and all(self.normal.flatten(ps, path) in (True, {})
                                                     for ps in patterns.values())
        # Priorities rank key terminals only where their languages overlap (pattern and
        # propertyNames keys); elsewhere the additional key excludes the declared names
        # exactly, and unranked keys never shadow a key of another anyOf branch.
        exact: dict[str, str | None] | None = None
        if patterns and not trivial and names_schema in (True, {}):
            exact = self._exact_keys(list(patterns), names, others=extra_schema is not False)
        ranked = bool(patterns) and not trivial and exact is None or names_schema not in (True, {})
        member_syms: list[str | None] = []
        for n in names:
            s = props[n]
            for p, ps in patterns.items():
                if search_pattern(p, n, path):
                    s = self.normal.merge(self.normal.flatten(s, path), self.normal.flatten(ps, path), path)
            v = self.value(s, path + ("properties", n))
            if v is None:
                member_syms.append(None)
                continue
            key = self.builder.terminal(er.literal_string_regex(n), "KEY", _DECLARED_KEY if ranked else 0)
            member_syms.append(self.builder.rule([[key, *ws, colon, *ws, v]]))
        # Extra members: keys outside `properties`.
        extras: list[str] = []
        if patterns and not trivial:
            # A key matching a pattern lexes as that pattern's terminal only: its priority
            # is above the additional-key terminal's, so additionalProperties never applies.
            if len(patterns) > 1 and len({canon(v) for v in patterns.values()}) > 1:
                self.ctx.approximate("patternProperties", path + ("patternProperties",),
                                     "a key matching several patterns needs only one of their schemas")
            for p, ps in patterns.items():
                key_regex: str | None = None
                if exact is None:
                    if any(search_pattern(p, n, path) for n in names):
                        self.ctx.approximate("patternProperties", path + ("patternProperties", p),
                                             "a declared property name that matches this pattern, repeated or "
                                             "out of schema order, is accepted with the pattern's schema alone")
                    try:
                        info = er.ecma_pattern_body(p)
                    except RegexError as exc:
                        raise GrammarError(f"{exc} (at {pointer(path + ('patternProperties',))})") from None
                    key_regex = None if info is None else f'"{info.body}"'
                v = self.value(ps, path + ("patternProperties", p))
                key = exact[p] if exact is not None else None if key_regex is None else \
                    self.builder.terminal(key_regex, "KEY", _PATTERN_KEY if ranked else 0)
                if key is not None and v is not None:
                    extras.append(self.builder.rule([[key, *ws, colon, *ws, v]]) or "")
        if extra_schema is not False:
            v = self.value(extra_schema, path + ("additionalProperties",))
            if v is not None:
                key_sym: str | None
                if names_schema not in (True, {}):
                    ns = self.normal.merge(self.normal.flatten(names_schema, path), {"type": "string"}, path)
                    key_sym = self.value(ns, path + ("propertyNames",))
                    if names:
                        self.ctx.approximate("propertyNames", path + ("propertyNames",),
                                             "a declared property name, repeated or out of schema order, is "
                                             "accepted with the additionalProperties schema")
                elif exact is not None:
                    key_sym = exact[_OTHER_KEYS]
                else:
                    key_sym = self.builder.terminal('"' + not_in_set(names) + '"', "KEY",
                                                    _ADDITIONAL_KEY if ranked else 0)
                if key_sym is not None:
                    extras.append(self.builder.rule([[key_sym, *ws, colon, *ws, v]]) or "")
        extra = self.builder.rule([[e] for e in extras if e])
        req = set(required)
        if any(member_syms[i] is None and n in req for i, n in enumerate(names)):
            return None
        # body(i, count, started): members from property i on; `count` saturates above the bounds.
        track = min_p > 0 or max_p is not None
        cap = max(min_p, max_p if max_p is not None else 0) + 1
        # Without declared properties the count is a repetition of extra members, O(log) rules
        # at any size; with them, states multiply by the count.
        if track and names and cap > limits.MAX_COUNTED_PROPERTIES + 1:
            self.ctx.unsupported("minProperties/maxProperties", path,
                                 f"property counts above {limits.MAX_COUNTED_PROPERTIES} are not enforced")
            track, min_p, max_p = False, 0, None
        memo: dict[tuple[int, int, bool], str | None] = {}
        sep_extra = self.builder.rule([[*ws, comma, *ws, extra]]) if extra else None

        def reads(key: tuple[int, int, bool]) -> list[tuple[bool, tuple[int, int, bool]]]:
            """The states `build(key)` continues with: (True, after writing property i),
            (False, after skipping it)."""
            i, c, started = key
            if i == len(names):
                return []
            out = []
            if member_syms[i] is not None and (max_p is None or c + 1 <= max_p):
                out.append((True, (i + 1, min(c + 1, cap) if track else 0, True)))
            if names[i] not in req:
                out.append((False, (i + 1, c, started)))
            return out

        def build(key: tuple[int, int, bool], successors: list[tuple[bool, tuple[int, int, bool]]]) -> str | None:
            """The rule of members from property i on (`successors`: its `reads`), its successors already in `memo`."""
            i, c, started = key
            alts: list[list[str]] = []
            if i < len(names):
                for wrote, after in successors:
                    nxt = memo[after]
                    if nxt is not None and wrote:
                        alts.append(([*ws, comma, *ws] if started else []) + [member_syms[i] or "", nxt])
                    elif nxt is not None:
                        alts.append([nxt])
            else:
                need = max(min_p - c, 0) if track else 0
                room = None if max_p is None else max_p - c
                if started and need == 0:
                    alts.append([])
                if extra is not None and sep_extra is not None and (room is None or room > 0):
                    if started:
                        alts.append(self.builder.repeat(sep_extra, max(need, 1), room))
                    else:
                        alts.append([extra, *self.builder.repeat(sep_extra, max(need - 1, 0),
                                                                 None if room is None else room - 1)])
            return self.builder.rule(alts)

        def body(start: tuple[int, int, bool]) -> str | None:
            """`build` over every state reachable from `start`, successors first, on an explicit
            stack: an object of 1,000 properties must not recurse 1,000 deep. States are
            built in the order a depth-first recursion would build them."""
            # (state, None) to visit; (state, its successors) to build once they are (states only lead
            # to higher property indices, so a state is never above itself).
            stack: list[tuple[tuple[int, int, bool], list[tuple[bool, tuple[int, int, bool]]] | None]] = [
                (start, None)]
            while stack:
                key, out = stack.pop()
                if out is None:
                    if key in memo:
                        continue
                    out = reads(key)
                    todo = [(after, None) for _, after in out if after not in memo]
                    if todo:
                        stack.append((key, out))
                        todo.reverse()
                        stack += todo
                        continue
                memo[key] = build(key, out)
            return memo[start]

        if self.ctx.any_order and not track and 0 < len(names) <= limits.MAX_ANY_ORDER_PROPERTIES:
            first = self.members_any_order(member_syms, [n in req for n in names], extra)
        elif self.ctx.exact and self.ctx.any_order and len(names) > 1:
            # exact=True never binds declared properties to schema order (with counts too).
            first = self.members_tracked(member_syms, [n in req for n in names], extra,
                                         min_p if track else 0, max_p if track else None, path)
        else:
            self.ctx.order_bound |= len(names) > 1
            first = body((0, 0, False))
        open_, close = self.ctx.literal("{"), self.ctx.literal("}")
        alts = []
        if not req and min_p == 0:
            alts.append([open_, *ws, close])
        if first is not None:
            alts.append([open_, *ws, first, *ws, close])
        return self.builder.rule(alts)

    def _exact_keys(self, patterns: list[str], names: list[str], *,
                    others: bool = True) -> dict[str, str | None] | None:
        """Key terminals that need no priorities: each pattern minus the declared names, and
        (under `_OTHER_KEYS`, unless `others` is False: no additional key is allowed) the keys
        matching no pattern and no name; None when the automata are over their limits (then
        priorities rank the keys). None for a pattern no key matches.

        Automaton terminals (`er.pattern_set_automaton`) while they have at most
        `MAX_EXACT_KEY_STATES` states in all; else the exclusions are a leading negative
        look-ahead, `(?!"docker")"pattern"` (pda's DFA builder subtracts it: a key lexeme ends
        at its closing quote, so a look-ahead that includes the quote excludes exactly those
        keys). Unranked keys never hide an equal key of another `anyOf` branch lexed at the
        same position, which ranked ones do.
        """
        if len(names) > limits.MAX_EXACT_KEY_NAMES or sum(map(len, patterns)) > limits.MAX_EXACT_KEY_PATTERNS:
            return None
        literals = ["^" + _ecma_escape(n) + "$" for n in names]
        try:
            found = {p: er.pattern_set_automaton([p], literals) for p in patterns}
            if others:
                found[_OTHER_KEYS] = er.pattern_set_automaton([], [*patterns, *literals])
            states = sum(a.n_states for a in found.values() if isinstance(a, TerminalAutomaton))
            if states <= limits.MAX_EXACT_KEY_STATES:
                return {k: None if a is None else self.builder.automaton_terminal(a, "KEY")
                        if isinstance(a, TerminalAutomaton) else self.builder.terminal(f'"{a}"', "KEY")
                        for k, a in found.items()}
        except RegexError:
            pass
        try:
            bodies = {p: er.ecma_pattern_body(p) for p in patterns}
        except RegexError:
            return None
        names_regex = "|".join(er.literal_string_regex(n) for n in names)
        out: dict[str, str | None] = {
            p: None if info is None else self.builder.terminal((f"(?!{names_regex})" if names else "")
                                                               + f'"{info.body}"', "KEY")
            for p, info in bodies.items()}
        if others:
            excluded = "|".join([*(f'"{info.body}"' for info in bodies.values() if info is not None),
                                 *([names_regex] if names else [])])
            out[_OTHER_KEYS] = self.builder.terminal((f"(?!{excluded})" if excluded else "")
                                                     + f'"(?:{er.ANY_UNIT})*"', "KEY")
        return out

    def members_any_order(self, members: list[str | None], required: list[bool], extra: str | None) -> str | None:
        """An object's members with declared properties in any order, each at most once.

        One rule per (set of declared properties already written, started): 2^n
        states for n declared properties, so only small objects
        (`MAX_ANY_ORDER_PROPERTIES`) take this form. Extra members may come
        anywhere; the object may close once every required property is written.
        """
        present = [m for m in members if m is not None]
        if extra is None and not present:
            return None
        ws, comma = self.ctx.ws, self.ctx.literal(",")
        # What must be written before the object may close, over the present members' bits; never, when a
        # required member has no instances.
        need = sum(1 << j for j, i in enumerate(i for i, m in enumerate(members) if m is not None) if required[i])
        closable = not any(r and m is None for m, r in zip(members, required))
        plan = _any_order_plan(len(present), extra is not None)
        names = [self.builder.reserve() for _ in plan]
        # Before a member: nothing first, a comma after one. Alternatives are tuples, as the IR's rows hold them.
        first, later = [(m,) for m in present], [(*ws, comma, *ws, m) for m in present]
        first_extra, later_extra = (extra,), (*ws, comma, *ws, extra)
        define = self.builder.define
        for name, (seen, started, successors, after_extra) in zip(names, plan):
            heads = later if started else first
            alts = [heads[j] + (names[k],) for j, k in successors]
            if after_extra is not None:
                alts.append((later_extra if started else first_extra) + (names[after_extra],))
            if started and closable and seen & need == need:
                alts.append(())
            define(name, alts)
        return names[0]

    def members_tracked(self, members: list[str | None], required: list[bool], extra: str | None,
                        min_p: int, max_p: int | None, path: tuple[str, ...]) -> str | None:
        """An object's members in any order under `exact=True`, where `members_any_order` does not
        apply: more than `MAX_ANY_ORDER_PROPERTIES` declared properties, or property counts.

        A state is (what is written of the tracked members, the property count, started).
        Up to `MAX_ANY_ORDER_PROPERTIES` declared properties every one is tracked (a set, each
        at most once: exact); past it only the required ones are, as a set up to
        `MAX_TRACKED_REQUIRED` of them (2^r states) and as a number past that (r + 1 states,
        any required member while fewer than r are written); the others are free and may
        repeat, a duplicate key that no parsed instance holds, accepted under a warning. For
        a text without duplicate keys this is exact. `minProperties`/`maxProperties` count
        every member (saturating at `minProperties` when there is no maximum); if states
        would pass `MAX_OBJECT_STATES` the counts are dropped, with a warning. Built on an
        explicit worklist, states that cannot reach the end pruned."""
        ws, comma = self.ctx.ws, self.ctx.literal(",")
        if any(m is None and r for m, r in zip(members, required)):
            return None
        n = len(members)
        req_syms = [m or "" for m, r in zip(members, required) if r]
        small = n <= limits.MAX_ANY_ORDER_PROPERTIES
        by_set = small or len(req_syms) <= limits.MAX_TRACKED_REQUIRED
        tracked = [(m, r) for m, r in zip(members, required) if m is not None and (small or r)]
        untracked = [m for m, r in zip(members, required) if m is not None and not small and not r]
        free = self.builder.rule([[m] for m in untracked] + ([[extra]] if extra is not None else []))
        any_req = None if by_set else self.builder.rule([[m] for m in req_syms])
        need = sum(1 << i for i, (_, r) in enumerate(tracked) if r) if by_set else len(req_syms)
        counted = min_p > 0 or max_p is not None
        written_states = 2 ** len(tracked) if by_set else len(req_syms) + 1
        count_states = (max_p if max_p is not None else min_p) + 1 if counted else 1
        if counted and 2 * written_states * count_states > limits.MAX_OBJECT_STATES:
            self.ctx.approximate("minProperties/maxProperties", path,
                                 f"tracking the property count with the properties in any order needs over "
                                 f"MAX_OBJECT_STATES = {limits.MAX_OBJECT_STATES} rules; the count is not enforced")
            counted, min_p, max_p = False, 0, None
        if not small:
            how = ("with its required ones tracked; an optional one may repeat" if by_set else
                   f"counting its {len(req_syms)} required ones (over MAX_TRACKED_REQUIRED = "
                   f"{limits.MAX_TRACKED_REQUIRED}); a property may repeat")
            self.ctx.approximate("properties", path + ("properties",),
                                 f"an object of more than {limits.MAX_ANY_ORDER_PROPERTIES} declared properties "
                                 f"takes them in any order {how} (a duplicate key, which no parsed instance holds)")
        State = tuple[int, int, bool]

        def moves(state: State) -> list[tuple[str, State]]:
            written, c, _ = state
            if counted and max_p is not None and c >= max_p:
                return []
            c2 = (c + 1 if max_p is not None else min(c + 1, min_p)) if counted else 0
            out: list[tuple[str, State]] = []
            if by_set:
                out += [(m, (written | 1 << i, c2, True)) for i, (m, _) in enumerate(tracked) if not written >> i & 1]
            elif written < need and any_req is not None:
                out.append((any_req, (written + 1, c2, True)))
            if free is not None:
                out.append((free, (written, c2, True)))
            return out

        def closes(state: State) -> bool:
            written, c, started = state
            return started and (written & need == need if by_set else written == need) and c >= min_p

        start: State = (0, 0, False)
        succ: dict[State, list[tuple[str, State]]] = {}
        todo = [start]
        while todo:
            st = todo.pop()
            if st in succ:
                continue
            succ[st] = moves(st)
            todo += [nxt for _, nxt in succ[st] if nxt not in succ]
        live = {st for st in succ if closes(st)}
        grew = True
        while grew:
            grew = False
            for st, out in succ.items():
                if st not in live and any(nxt in live for _, nxt in out):
                    live.add(st)
                    grew = True
        if start not in live:
            return None
        names = {st: self.builder.reserve() for st in succ if st in live}
        for st, name in names.items():
            sep = [*ws, comma, *ws] if st[2] else []
            alts = [[*sep, sym, names[nxt]] for sym, nxt in succ[st] if nxt in live]
            if closes(st):
                alts.append([])
            self.builder.define(name, alts)
        return names[start]

    def _finite_names(self, ns: Any, path: tuple[str, ...]) -> list[str] | None:
        """The names a `propertyNames` schema allows when it lists them (`enum`/`const`, up to
        `MAX_PROPERTY_NAMES`), each passing its other keywords; None otherwise."""
        if not isinstance(ns, dict) or ("enum" not in ns and "const" not in ns) \
                or any(k in ns for k in ("anyOf", "oneOf", "not", "if")):
            return None
        values = [ns["const"]] if "const" in ns else list(ns["enum"])
        if len(values) > limits.MAX_PROPERTY_NAMES:
            return None
        return list(dict.fromkeys(v for v in values if isinstance(v, str) and self._name_ok(v, ns, path)))

    def _name_ok(self, name: str, ns: Any, path: tuple[str, ...]) -> bool:
        if ns is False:
            return False
        if not isinstance(ns, dict):
            return True
        if "enum" in ns and name not in ns["enum"]:
            return False
        if "const" in ns and name != ns["const"]:
            return False
        return const_satisfies(name, ns, self.ctx.formats)


def _ecma_escape(text: str) -> str:
    """`text` as an ECMA-262 (u flag) pattern matching it literally."""
    return "".join("\\" + c if c in "^$\\.*+?()[]{}|/" else c for c in text)
