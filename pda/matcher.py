"""`pda.Matcher`: the per-sequence state machine and the public serving API.

A matcher's state is the history of (parser node, lexer state) pairs, one per
accepted token, so rollback is popping and a copy is a list copy. Masks come
from the compiled grammar's memo; accepting a token feeds its bytes through
the same lexer step function the reference path uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pda.compiler import CompiledGrammar
from pda.errors import LimitExceeded, TokenRejected
from pda.parser.earley import Node

MAX_FORCED_BYTES = 4096
_INT32 = np.dtype(np.int32)  # native int32 (the bitmask layout); other arrays take the general path


class Matcher:
    """Tracks one generated sequence against a compiled grammar."""

    def __init__(self, compiled: CompiledGrammar) -> None:
        self.compiled = compiled
        self._history: list[tuple[Node, int]] = [compiled.initial_state()]
        self._terminated = False
        self._tokens: list[int] = []
        self.error: LimitExceeded | None = None

    # --- state ------------------------------------------------------------------------

    def reset(self) -> None:
        """Back to the start of the grammar."""
        del self._history[1:]
        self._tokens.clear()
        self._terminated = False
        self.error = None

    def copy(self) -> "Matcher":
        """An independent matcher in the same state (cheap: shares the compiled grammar)."""
        other = Matcher.__new__(Matcher)
        other.compiled = self.compiled
        other._history = list(self._history)
        other._terminated = self._terminated
        other._tokens = list(self._tokens)
        other.error = self.error
        return other

    def is_terminated(self) -> bool:
        """True once EOS has been accepted."""
        return self._terminated

    def can_end(self) -> bool:
        """Whether the text so far is a whole sentence (EOS is allowed now)."""
        if self._terminated:
            return False
        node, q = self._history[-1]
        return self.compiled.can_end(node, q)

    @property
    def num_tokens(self) -> int:
        return len(self._tokens)

    def rollback(self, n: int = 1) -> None:
        """Undo the last `n` accepted tokens (EOS included), e.g. after a rejected speculation."""
        if n < 0 or n > len(self._tokens):
            raise ValueError(f"cannot roll back {n} tokens: {len(self._tokens)} accepted")
        self.error = None
        for _ in range(n):
            tok = self._tokens.pop()
            if self._terminated and tok in self.compiled.vocab.eos_ids:
                self._terminated = False
            else:
                self._history.pop()

    # --- tokens -----------------------------------------------------------------------

    def _check_id(self, token_id: int) -> None:
        if not 0 <= token_id < self.compiled.vocab_size:
            raise TokenRejected(
                f"token id {token_id} is outside the vocabulary (0..{self.compiled.vocab_size - 1})"
            )

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token. False (state unchanged) if the grammar does not allow it here.

        Raises `TokenRejected` for an id outside the vocabulary or a special token other than EOS.
        """
        token_id = int(token_id)
        self._check_id(token_id)
        vocab = self.compiled.vocab
        if token_id in vocab.eos_ids:
            if not self.can_end():
                return False
            self._terminated = True
            self._tokens.append(token_id)
            return True
        if token_id >= vocab.size or vocab.tokens[token_id] is None:
            raise TokenRejected(f"token {vocab.describe(token_id) if token_id < vocab.size else token_id} is a special or unused id, never part of the text")
        return self._advance(vocab.tokens[token_id], token_id)

    def accept_bytes(self, data: bytes | str) -> bool:
        """Advance by raw text (e.g. forced bytes) as one step; False (unchanged) if not viable."""
        return self._advance(data.encode("utf-8") if isinstance(data, str) else data, -1)

    def _advance(self, data: bytes, token_id: int) -> bool:
        """Feed a step's bytes; on success record it (as `token_id`, -1 for raw bytes)."""
        if self._terminated or self.error is not None or not data:
            return False
        node, q = self._history[-1]
        try:
            nxt = self.compiled.lexer.feed(node, q, data)
        except LimitExceeded as exc:
            self.error = exc
            return False
        if nxt is None:
            return False
        self._history.append(nxt)
        self._tokens.append(token_id)
        return True

    # --- masks ------------------------------------------------------------------------

    def _mask(self) -> np.ndarray:
        """The packed allowed-token mask for the current state, EOS included.

        After EOS, or once a resource limit was hit (`self.error`, sticky until
        `reset`/`rollback`), only EOS is allowed, so generation stops cleanly.
        """
        compiled = self.compiled
        if self._terminated or self.error is not None:
            return compiled.eos_mask
        node, q = self._history[-1]
        try:
            return compiled.step_mask(node, q)
        except LimitExceeded as exc:
            self.error = exc
            return compiled.eos_mask

    def fill_bitmask(self, bitmask: Any, row: int = 0) -> None:
        """Write the allowed-token mask into row `row` of an int32 `[batch, ceil(V/32)]` array or tensor.

        Bit `i % 32` of word `i // 32` is token i. Words past the compiled width are zeroed.
        """
        compiled = self.compiled
        if (bitmask.dtype is _INT32 and bitmask.ndim == 2  # numpy's int32 (a tensor's dtype is torch's)
                and bitmask.size == len(bitmask) * compiled.mask_words and not self._terminated and self.error is None):
            # The usual case, straight into the row. Hot path (~1 µs a step, of which a function
            # call would be a tenth): the compiled grammar's memos are read here, not through a method.
            node, q = self._history[-1]
            try:
                rows = compiled._plain.get(node.allowed)
                if rows is None:
                    rows = compiled.plain_rows(node.allowed)
                if rows:
                    lo = rows.lo[q]
                    if lo >= 0:  # a plain finite-set state: a zero row, then its packed words
                        hi = rows.hi[q]
                        out = bitmask[row]
                        out[...] = compiled._empty  # a copy is faster than fill(0)
                        out[rows.words[lo:hi]] = rows.bits[lo:hi]
                        return
                steps = node.cache.get(compiled._id)  # `step_mask`'s memo
                mask = steps.get(q) if steps is not None else None
                bitmask[row] = mask if mask is not None else compiled.step_mask(node, q)
                return
            except LimitExceeded as exc:
                self.error = exc
        width = bitmask.shape[1]
        mask = self._mask()
        n = min(width, len(mask))
        if isinstance(bitmask, np.ndarray):
            bitmask[row, :n] = mask[:n]
            bitmask[row, n:] = 0
        else:
            import torch

            bitmask[row, :n].copy_(torch.from_numpy(mask[:n]))
            if n < width:
                bitmask[row, n:] = 0

    def allowed_token_ids(self) -> np.ndarray:
        """The allowed token ids, ascending (EOS ids included where the text can end)."""
        bits = np.unpackbits(self._mask().view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.compiled.vocab_size])

    def is_allowed(self, token_id: int) -> bool:
        """Whether one token is allowed now (reads the mask; no state change)."""
        mask = self._mask()
        return bool((int(mask[token_id >> 5]) >> (token_id & 31)) & 1)

    def forced_bytes(self) -> bytes:
        """The bytes that must come next whatever is generated (jump-forward), possibly empty.

        Stops where two or more bytes are possible, or where the text may end.
        """
        if self._terminated:
            return b""
        lexer = self.compiled.lexer
        node, q = self._history[-1]
        out = bytearray()
        while len(out) < MAX_FORCED_BYTES and not lexer.can_end(node, q):
            only = None
            count = 0
            for byte in range(256):
                nxt = lexer.step(node, q, byte)
                if nxt is not None:
                    count += 1
                    if count > 1:
                        break
                    only = (byte, nxt)
            if count != 1 or only is None:
                break
            out.append(only[0])
            node, q = only[1]
        return bytes(out)
