"""A token budget for a reasoning segment: after N tokens inside `<think>`, its end is forced.

How long a model reasons is a count of tokens, not a property of the text, so it is not
part of the grammar: `ReasoningMatcher` is a `pda.Matcher` that also follows where the
text is. Outside a segment it looks for the `open` delimiter; once `open` has been read
it counts the tokens accepted inside; at `max_tokens` it allows only tokens that go on
spelling the rest of the `close` delimiter to its end (a prefix of it that other tokens
can finish, or a token that completes it and goes on into the answer), intersected with
the grammar's own mask, so the text stays in the grammar and the segment ends within
`len(close)` more tokens. `close` must be what the grammar ends the segment with. If the
grammar refuses every such token there (the delimiters do not match it), the budget
cannot force anything and the grammar's mask is served unchanged.

Invariants: `_segment` has one entry per entry of the matcher's history: (inside, how
many bytes of the delimiter looked for the text ends with, tokens inside so far), so
rollback and copies keep it exact. Delimiters are matched on bytes, as the grammar is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pda.compiler import CompiledGrammar
from pda.matcher import Matcher
from pda.rows import copy_row
from pda.vocab.lookups import prefix_index

Segment = tuple[bool, int, int]


class ReasoningMatcher(Matcher):
    """`Matcher` with a budget of `max_tokens` tokens between `open` and `close` (see the module docstring)."""

    def __init__(self, compiled: CompiledGrammar, *, max_tokens: int, open: str = "<think>", close: str = "</think>",
                 **matcher_options: Any) -> None:
        if type(max_tokens) is not int or max_tokens < 0:
            raise ValueError(f"max_tokens must be an int >= 0, got {max_tokens!r}")
        if not open or not close:
            raise ValueError("the open and close delimiters must not be empty")
        super().__init__(compiled, **matcher_options)
        self.max_tokens = max_tokens
        self.delimiters = (open.encode("utf-8"), close.encode("utf-8"))
        self._segment: list[Segment] = [(False, 0, 0)]
        self._forcing: dict[bytes, np.ndarray] = {}

    # --- where the text is --------------------------------------------------------------

    def _advance(self, data: bytes, step: int | bytes) -> bool:
        if not super()._advance(data, step):
            return False
        inside, matched, count = self._segment[-1]
        count += inside
        for byte in data:
            target = self.delimiters[inside]
            matched = _extend(target, matched, byte)
            if matched == len(target):
                inside, matched, count = not inside, 0, 0
        self._segment.append((inside, matched, count))
        return True

    def rollback(self, n: int = 1) -> None:
        super().rollback(n)
        del self._segment[len(self._history):]

    def reset(self) -> None:
        super().reset()
        del self._segment[1:]

    def copy(self) -> "ReasoningMatcher":
        other = ReasoningMatcher.__new__(ReasoningMatcher)
        other.__dict__.update(super().copy().__dict__)
        other.max_tokens, other.delimiters = self.max_tokens, self.delimiters
        other._segment, other._forcing = list(self._segment), self._forcing
        return other

    def __reduce__(self) -> tuple:
        return _restore, (self.compiled, list(self._steps), self.max_tokens, self.delimiters)

    def tokens_in_segment(self) -> int | None:
        """Tokens accepted inside the current reasoning segment, or None outside one."""
        inside, _, count = self._segment[-1]
        return count if inside else None

    def _rest_of_close(self) -> bytes | None:
        """The bytes of `close` still to come when the budget is spent, else None."""
        inside, matched, count = self._segment[-1]
        if not inside or count < self.max_tokens or self._terminated or self.error is not None:
            return None
        return self.delimiters[1][matched:]

    # --- masks ---------------------------------------------------------------------------

    def _mask(self) -> np.ndarray:
        mask = super()._mask()
        rest = self._rest_of_close()
        if rest is None:
            return mask
        forced = mask & self._forcing_mask(rest)
        return forced if forced.any() else mask

    def fill_bitmask(self, bitmask: Any, row: int = 0) -> None:
        if self._rest_of_close() is None:
            super().fill_bitmask(bitmask, row)
        elif isinstance(bitmask, np.ndarray) and bitmask.dtype == np.int32 and bitmask.ndim == 2 and type(row) is int:
            copy_row(bitmask, row, self._mask())
        else:
            self._fill_general(bitmask, row)

    def accept_token(self, token_id: int) -> bool:
        if self._rest_of_close() is not None and not self.is_allowed(token_id):
            return False
        return super().accept_token(token_id)

    def forced_bytes(self) -> bytes:
        """The rest of `close` once the budget is spent (and what the grammar forces after it)."""
        rest = self._rest_of_close()
        if rest is not None:
            probe = Matcher.copy(self)
            if probe.accept_bytes(rest):  # the grammar takes the whole close here
                return rest + probe.forced_bytes()
        return super().forced_bytes()

    def _forcing_mask(self, rest: bytes) -> np.ndarray:
        """Tokens that go on spelling `rest` to its end: a prefix of it whose remainder some tokens
        spell too, or a token that starts with all of it (cached per `rest`)."""
        found = self._forcing.get(rest)
        if found is None:
            vocab = self.compiled.vocab
            index = prefix_index(vocab)
            # spellable[i]: some tokens spell rest[i:] to its end (the last may go on past it)
            spellable = [False] * (len(rest) + 1)
            spellable[len(rest)] = True
            for i in range(len(rest) - 1, -1, -1):
                spellable[i] = len(index.starting_with(rest[i:])) > 0 or any(
                    spellable[i + len(vocab.tokens[t])] for t in index.prefixes_of(rest[i:]).tolist())
            ids = [*index.starting_with(rest).tolist(),
                   *(t for t in index.prefixes_of(rest).tolist() if spellable[len(vocab.tokens[t])])]
            bits = np.zeros(self.compiled.mask_words * 32, dtype=bool)
            bits[ids] = True
            found = self._forcing[rest] = np.packbits(bits, bitorder="little").view(np.int32)
        return found


def _extend(target: bytes, matched: int, byte: int) -> int:
    """How many bytes of `target` the text ends with after `byte`, given it ended with `matched` (the
    delimiters are a few bytes: the longest border is found by trying each length)."""
    text = target[:matched] + bytes([byte])
    for k in range(min(len(text), len(target)), 0, -1):
        if text.endswith(target[:k]):
            return k
    return 0


def _restore(compiled: CompiledGrammar, steps: list, max_tokens: int, delimiters: tuple[bytes, bytes]) -> ReasoningMatcher:
    m = ReasoningMatcher(compiled, max_tokens=max_tokens, open=delimiters[0].decode("utf-8"),
                         close=delimiters[1].decode("utf-8"))
    for step in steps:
        if not (m.accept_bytes(step) if isinstance(step, bytes) else m.accept_token(step)):
            raise ValueError("a pickled ReasoningMatcher's steps do not replay")
    return m
