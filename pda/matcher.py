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
from pda.rows import BitmaskLayoutError, copy_row, scatter_row

MAX_FORCED_BYTES = 4096


def _numpy_view(bitmask: Any) -> Any:
    """A CPU torch tensor's numpy view (same memory), so that it takes the fast path; anything else as is."""
    if getattr(getattr(bitmask, "device", None), "type", None) == "cpu":
        try:
            return bitmask.numpy()
        except (RuntimeError, TypeError):  # a tensor that needs grad, or a dtype numpy lacks
            pass
    return bitmask


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
        if type(bitmask) is not np.ndarray:
            bitmask = _numpy_view(bitmask)
        try:
            if type(bitmask) is np.ndarray:
                # The usual case, one `pda.rows` call straight into the row. Hot path (~0.4 µs a step
                # with the compiled writer): the compiled grammar's memos are read here, not through methods.
                if self._terminated or self.error is not None:
                    copy_row(bitmask, row, compiled.eos_mask)
                    return
                node, q = self._history[-1]
                rows = compiled._plain.get(node.allowed)
                if rows is None:
                    rows = compiled.plain_rows(node.allowed)
                if rows:
                    lo = rows.lo[q]
                    if lo >= 0:  # a plain finite-set state: a zero row but for its packed words
                        scatter_row(bitmask, row, rows.words, rows.bits, lo, rows.hi[q])
                        return
                steps = node.cache.get(compiled._id)  # `step_mask`'s memo
                mask = steps.get(q) if steps is not None else None
                copy_row(bitmask, row, mask if mask is not None else compiled.step_mask(node, q))
                return
        except LimitExceeded as exc:
            self.error = exc
        except BitmaskLayoutError:  # strided, another dtype: the general path below
            pass
        self._fill_general(bitmask, row)

    def _fill_general(self, bitmask: Any, row: int) -> None:
        """`fill_bitmask` for any 2-D numpy array or torch tensor (any device or layout)."""
        if bitmask.ndim != 2:
            raise ValueError(f"the bitmask must be 2-D [batch, words], got shape {tuple(bitmask.shape)}")
        if not 0 <= row < bitmask.shape[0]:
            raise IndexError(f"row {row} is outside a bitmask of {bitmask.shape[0]} rows")
        if isinstance(bitmask, np.ndarray) and not bitmask.flags.writeable:
            raise ValueError("the bitmask is read-only")
        mask = self._mask()
        width = bitmask.shape[1]
        n = min(width, len(mask))
        if isinstance(bitmask, np.ndarray):
            bitmask[row, :n] = mask[:n]
            bitmask[row, n:] = 0
            return
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
