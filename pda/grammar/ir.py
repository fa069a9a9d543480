"""The grammar IR every front end produces and every back end consumes.

A grammar is a set of terminals (regular: a Python-syntax regex with flags, or an
automaton whose edges are such regexes) and rules (context-free: a left-hand side
and a sequence of symbol names).
Terminal names and rule names share one namespace; a symbol is a terminal if
it names one. The IR is immutable and has a stable content hash, which keys
the compile caches.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import chain
from operator import itemgetter
from typing import Any


@dataclass(frozen=True)
class TerminalAutomaton:
    """A terminal's language as an automaton whose edges are regexes.

    States are `0..n_states-1`; `edges` holds (source, regex, target) triples, each
    regex in the terminal's syntax and flags (`[0-9]`, `\\.`, a JSON string unit).
    The language is every concatenation of strings matched by the labels along a
    path from `start` to a state in `accept`: an NFA over regexes (edges out of one
    state may overlap; a label that matches the empty string is an ε-edge).

    Why it exists: some small automata have only exponentially long regexes (the
    residue automaton of the multiples of 9 has 9 states, its regex 700,000
    characters; `pda.grammar.multiples`), and a terminal given as regex text would
    have to spell them out. The DFA builder reads the automaton itself, at a cost
    proportional to its size (`pda.regex.dfa.build_lexer_dfa`).
    """

    n_states: int
    start: int
    accept: tuple[int, ...]
    edges: tuple[tuple[int, str, int], ...]

    def __post_init__(self) -> None:
        states = range(self.n_states)
        if self.start not in states or not all(q in states for q in self.accept):
            raise ValueError("terminal automaton: start or accepting state out of range")
        if not all(q in states and r in states and isinstance(label, str) for q, label, r in self.edges):
            raise ValueError("terminal automaton: an edge is not (state, regex, state)")

    @cached_property
    def digest(self) -> str:
        """A stable hash of the automaton (states, accepting states, edges in order): a JSON header
        (the counts, the accepting states, each distinct label once, in first-use order), then the
        edges' sources, label indices and targets as three arrays of 64-bit integers (their length
        is in the header). Edges share a few long labels (a JSON-unit class is hundreds of characters;
        o79409's 3,070 edges have 10 labels, 247 kB) that written per edge were most of the cost."""
        sources, labels, targets = zip(*self.edges) if self.edges else ((), (), ())
        distinct = list(dict.fromkeys(labels))
        index = {label: i for i, label in enumerate(distinct)}
        header = [self.n_states, self.start, self.accept, distinct, len(self.edges)]
        h = hashlib.sha256(json.dumps(header, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        for column in (sources, map(index.__getitem__, labels), targets):
            h.update(array("q", column).tobytes())
        return h.hexdigest()

    def describe(self) -> str:
        """The `pattern` of a terminal given by this automaton: text for messages, never parsed as a regex."""
        return f"<automaton: {self.n_states} states, {len(self.edges)} edges>"


@dataclass(frozen=True, init=False)
class TerminalDef:
    """A regular terminal.

    `pattern` is regex source in Python's `re` syntax (plus `\\p{..}` property
    classes); `flags` a string of inline-flag letters (`i`, `s`, `m`, `x`, `a`, `u`,
    and pda's own `b`: the pattern reads raw bytes, docs/semantics.md). A terminal whose
    pattern came from a string literal has `literal` set (its `pattern` is
    then `re.escape`d). Higher `priority` wins when one lexeme matches
    several terminals. `lazy` terminals end at their first match.

    A terminal with an `automaton` is that automaton's language (its edges read with
    `flags`); its `pattern` then only describes it in messages and dumps
    (`TerminalAutomaton.describe`): it is no regex, no literal, and never merged into
    another terminal's alternation.
    """

    name: str
    pattern: str
    flags: str = ""
    priority: int = 0
    literal: bool = False
    lazy: bool = False
    line: int | None = field(default=None, compare=False)
    automaton: TerminalAutomaton | None = None

    def __init__(self, name: str, pattern: str, flags: str = "", priority: int = 0, literal: bool = False,
                 lazy: bool = False, line: int | None = None, automaton: TerminalAutomaton | None = None) -> None:
        """The fields at once (the generated frozen `__init__` sets them one `object.__setattr__` at a time,
        twice as slow: a front end makes one per terminal, ~900 for JSONSchemaBench's 31 common schemas)."""
        self.__dict__.update(name=name, pattern=pattern, flags=flags, priority=priority, literal=literal, lazy=lazy,
                             line=line, automaton=automaton)


# A pattern that matches nothing: terminals only the indenter produces.
NEVER = r"[^\x00-\U0010ffff]"


@dataclass(frozen=True)
class IndentConfig:
    """Opt-in Python-style indentation: which terminals an indenter produces, and how widths count.

    See `pda.parser.indent`.
    """

    newline: str = "_NEWLINE"
    indent: str = "_INDENT"
    dedent: str = "_DEDENT"
    open_brackets: tuple[str, ...] = ("(", "[", "{")
    close_brackets: tuple[str, ...] = (")", "]", "}")
    tab_len: int = 8
    max_width: int = 80

    def width_terminal(self, k: int) -> str:
        return f"{self.newline}@{k}"

    @property
    def any_width_terminal(self) -> str:
        return f"{self.newline}@*"


@dataclass(frozen=True)
class Rule:
    """One alternative of a nonterminal: `lhs -> rhs[0] rhs[1] ...`.

    `alias` keeps the Lark alias (or expansion name) for error messages.
    """

    lhs: str
    rhs: tuple[str, ...]
    alias: str | None = None


# A rule as the IR stores it: (lhs, rhs, alias), an exact tuple of strings.
RuleRow = tuple[str, tuple[str, ...], "str | None"]

# The `Rule` objects of the IR most recently built (or whose `rules` were read), with a weak reference to it:
# what a compile reads right after building an IR costs no views, and only one IR's objects live on here.
_recent_rules: tuple[Callable[[], object], tuple[Rule, ...]] = (type(None), ())  # type(None)() is None: no IR yet


class _RuleRows:
    """`GrammarIR.rules`, a data descriptor: stored as `GrammarIR.rule_rows`, read as `Rule` objects.

    Why: a compiled grammar keeps its IR as long as it is cached, and every object the cyclic garbage
    collector tracks costs a traversal of it at every full collection (~4 over the object's life in a
    stream of new schemas; docs/profile.md, "Twenty-eighth profile"). A `Rule` is tracked; a row, an
    exact tuple of strings, is untracked by the collector at its first pass. So the IR holds rows, and
    `rules` rebuilds the `Rule` objects when read (the most recent IR's are kept, `_recent_rules`).
    """

    def __get__(self, ir: "GrammarIR | None", owner: type | None = None) -> tuple[Rule, ...]:
        if ir is None:
            raise AttributeError("rules")  # a dataclass field without a default
        global _recent_rules
        ref, rules = _recent_rules
        if ref() is not ir:
            rules = tuple(Rule(lhs, rhs, alias) for lhs, rhs, alias in ir.rule_rows)
            _recent_rules = (weakref.ref(ir), rules)
        return rules

    def __set__(self, ir: "GrammarIR", rules: tuple[Rule, ...]) -> None:
        global _recent_rules
        if rules.__class__ is _Rows:
            ir.__dict__["_rule_rows"] = tuple(rules)
            return
        rules = tuple(rules)
        ir.__dict__["_rule_rows"] = tuple([(r.lhs, r.rhs, r.alias) for r in rules])
        _recent_rules = (weakref.ref(ir), rules)


class _Rows(tuple):
    """Rules handed to `GrammarIR` as the rows it stores (`GrammarIR.from_rows`, `with_rule_rows`): a
    front end that writes rows builds no `Rule` object, and none is built unless `rules` is read."""


# How lexeme boundaries are decided (docs/semantics.md, "Lexer modes").
CONTEXTUAL = "contextual"  # by the terminals the parser can accept next (default)
BASIC = "basic"  # by all of the grammar's terminals, as a conventional tokenizer does
LEXER_MODES = (CONTEXTUAL, BASIC)


@dataclass(frozen=True)
class GrammarIR:
    """A whole grammar: terminals, rules, one start symbol, ignored terminals, a lexer mode.

    Under the basic lexer mode, terminals that no rule uses still take part in
    lexing: text they match best is refused (a tokenizer's error tokens).
    `rule_rows` holds the rules as (lhs, rhs, alias) tuples (what compile-time passes
    read); `rules` gives them as `Rule` objects (`_RuleRows`).
    """

    terminals: tuple[TerminalDef, ...]
    rules: tuple[Rule, ...] = _RuleRows()  # held as `rule_rows` (`_RuleRows`)
    start: str
    ignore: tuple[str, ...] = ()
    indent: IndentConfig | None = None
    lexer: str = CONTEXTUAL
    source: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        names = [t.name for t in self.terminals]
        if len(set(names)) != len(names):
            raise ValueError("duplicate terminal names in grammar IR")
        if self.lexer not in LEXER_MODES:
            raise ValueError(f"unknown lexer mode {self.lexer!r} (expected one of {', '.join(LEXER_MODES)})")

    @classmethod
    def from_rows(cls, terminals: tuple[TerminalDef, ...], rows: Iterable[RuleRow], start: str,
                  **fields: Any) -> "GrammarIR":
        """The IR of these rule rows, each an exact tuple (lhs, rhs: a tuple of names, alias), stored as given
        (no `Rule` objects); `fields` are the other fields (`source`, `lexer`...)."""
        return cls(terminals, _Rows(rows), start, **fields)  # type: ignore[arg-type]

    def with_rule_rows(self, rows: Iterable[RuleRow], **changes: Any) -> "GrammarIR":
        """`dataclasses.replace(self, **changes)` with these rule rows (as `from_rows` takes them)."""
        return replace(self, rules=_Rows(rows), **changes)

    @property
    def rule_rows(self) -> tuple[RuleRow, ...]:
        return self.__dict__["_rule_rows"]

    @cached_property
    def terminal_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.terminals)

    @cached_property
    def terminal_by_name(self) -> dict[str, TerminalDef]:
        return {t.name: t for t in self.terminals}

    @cached_property
    def content_hash(self) -> str:
        """A SHA-256 of everything that affects the language, over an unambiguous encoding: the
        repr of the terminals and settings (self-delimiting), then `_rules_encoding`."""
        settings = (
            tuple((t.name, t.pattern, t.flags, t.priority, t.literal, t.lazy,
                   None if t.automaton is None else t.automaton.digest) for t in self.terminals),
            self.start, tuple(sorted(self.ignore)), repr(self.indent), self.lexer,
        )
        h = hashlib.sha256(repr(settings).encode("utf-8", "surrogatepass"))
        h.update(_rules_encoding(self.rule_rows))
        return h.hexdigest()


def _rules_encoding(rows: tuple[RuleRow, ...]) -> bytes:
    """The rules as their count, their right sides' lengths (int64), then the left sides and then every right
    side joined by NUL (each right side joined by NUL, those joined by NUL), or the repr of every symbol (left
    sides first) when a symbol holds a NUL (the NULs counted tell; a tag byte tells which): C joins, and the
    lengths as an array rather than a repr (the 31 common JSON Schemas' 7,030 rules, 31,024 symbols: 1.5 ms
    warm with a flat list of the symbols and the repr of the lengths, this ~0.8 ms)."""
    n = len(rows)
    rhs = list(map(itemgetter(1), rows))
    lengths = array("q", list(map(len, rhs)))  # from a list: ~25% faster than from the iterator (same bytes)
    text = "\x00".join(map(itemgetter(0), rows)) + "\x00" + "\x00".join(map("\x00".join, rhs))
    # NULs the layout puts there: between the left sides, after them, between the right sides and inside each
    # non-empty one; a NUL in a symbol adds to them.
    layout = 2 * max(n - 1, 0) + 1 + sum(lengths) - (n - lengths.count(0))
    if text.count("\x00") == layout:
        tagged = "\x00" + text
    else:
        tagged = "\x01" + repr(list(chain(map(itemgetter(0), rows), chain.from_iterable(rhs))))
    return f"{n}\x00".encode() + lengths.tobytes() + tagged.encode("utf-8", "surrogatepass")
