"""`pda.Limits`: the resource budgets a compiled grammar works within.

Every per-step cost of a matcher is bounded by one of these fields (docs/limits.md
lists each with its measured cost). Going over a budget raises `LimitExceeded`: at
compile time to the caller, at serve time into the matcher's sticky error state
(`Matcher.error`; only EOS is allowed from then on), so a generation loop ends
cleanly instead of stalling.

Invariants:
* A `Limits` is immutable and hashable: it is part of the compile memo key, and
  two compiles with equal limits share one `CompiledGrammar`.
* The parser and lexer fields (`recognizer_limits`) fix a `Recognizer`; the
  others are read by the compiled grammar and the matcher only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Budgets for one compiled grammar; pass to `pda.compile(grammar, vocab, limits=...)`."""

    max_node_items: int = 100_000
    """Earley items in one parser node (one position of the text)."""
    max_node_work: int = 200_000
    """Item insertions tried while building one parser node: bounds a step on ambiguous grammars."""
    max_node_seconds: float = 1.0
    """Wall-clock seconds for building one parser node: a backstop behind `max_node_work`."""
    max_lexer_states: int = 200_000
    """DFA states of one terminal, of one candidate set's product, or of the basic mode's all-terminal DFA."""
    max_forced_bytes: int = 4096
    """Bytes one `Matcher.forced_bytes()` call searches."""
    warmup_seconds: float = 0.0
    """Seconds `compile` spends precomputing masks near the start of the grammar (0, the default: none;
    every mask is computed when a step first needs it). A grammar compiled once and served long
    (and written to the disk cache for the next process) may want 1.0."""
    warmup_nodes: int = 64
    """Parser nodes `compile` precomputes masks for, at most."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.type == "int":
                if type(value) is not int:
                    raise TypeError(f"Limits.{field.name} must be an int, got {type(value).__name__}")
                if value < (0 if field.name == "warmup_nodes" else 1):
                    raise ValueError(f"Limits.{field.name} must be positive, got {value}")
            else:
                if type(value) not in (int, float):
                    raise TypeError(f"Limits.{field.name} must be a number of seconds, got {type(value).__name__}")
                if not value >= 0 or (value == 0 and field.name == "max_node_seconds"):
                    raise ValueError(f"Limits.{field.name} must be positive, got {value}")

    def recognizer_limits(self) -> "Limits":
        """These limits with the fields a `Recognizer` does not read set to their defaults (its cache key)."""
        return dataclasses.replace(
            self,
            max_forced_bytes=DEFAULT_LIMITS.max_forced_bytes,
            warmup_seconds=DEFAULT_LIMITS.warmup_seconds,
            warmup_nodes=DEFAULT_LIMITS.warmup_nodes,
        )


DEFAULT_LIMITS = Limits()
