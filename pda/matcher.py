"""`pda.Matcher`: the per-sequence state machine and the public serving API.

A matcher's state is the history of (parser node, lexer state) pairs, one per
accepted step, so rollback is popping and a copy is a list copy. Masks come
from the compiled grammar's memo (`pda.masks`); accepting a token feeds its bytes
through the same scanner (`pda.scanner`) the reference path uses.

Invariants:
* `_history` has one entry more than there are non-EOS steps; `_steps` holds every
  step in order: a token id, or the bytes of an `accept_bytes` call. A pickled
  matcher is its compiled grammar and `_steps`, replayed on unpickling.
* `error` (sticky until `reset`/`rollback`) is the `LimitExceeded` a step hit. While
  it is set the matcher behaves as a finished text: the mask is EOS only, `can_end()`
  is True, `accept_token(EOS)` terminates, `forced_bytes()` is empty; nothing raises.
* Public methods check their arguments at the boundary: ids are ints (numpy and
  torch integers too; never bool, float or str) inside the compiled width, bitmasks
  int32/uint32. The common case costs one `type(x) is int` test.
* The ids that end the text are the vocabulary's EOS ids, or the matcher's own
  `stop_token_ids` (special ids, e.g. a request's stop tokens): then its rows are the
  grammar's text mask with those bits added where the text can end, and nothing is
  rebuilt for them.
* `accept_tokens` is all or nothing and `validate_tokens` changes nothing: both are
  built on `accept_token` and `rollback`, so they cannot disagree with single steps.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from pda.compiler import CompiledGrammar
from pda.errors import LimitExceeded, TokenRejected
from pda.parser.earley import Node
from pda.rows import MAX_ROW_THREADS, BitmaskLayoutError, RowSource, check_distinct, copy_row, write_rows

_INT32 = np.dtype(np.int32)
_BITMASK_DTYPES = (_INT32, np.dtype(np.uint32))


class BitmaskRowError(IndexError, ValueError):
    """`fill_bitmask`'s row is outside the bitmask: a bad argument value (ValueError) and an index (IndexError)."""


def _as_int(value: Any, what: str) -> int:
    """`value` as a Python int: ints, numpy and torch integers; TypeError for bool, float, str and the rest."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, got a bool ({value!r})")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} ({value!r})") from None


def _as_ints(values: Iterable[Any]) -> list[int]:
    """Token ids as a list of Python ints, all checked before any is used (TypeError as `_as_int`)."""
    return [v if type(v) is int else _as_int(v, "token id") for v in values]


def _numpy_view(bitmask: Any) -> Any:
    """A CPU torch tensor's numpy view (same memory), so that it takes the fast path; anything else as is."""
    if getattr(getattr(bitmask, "device", None), "type", None) == "cpu":
        try:
            return bitmask.numpy()
        except (RuntimeError, TypeError):  # a tensor that needs grad, or a dtype numpy lacks
            pass
    return bitmask


def _restore(
    compiled: CompiledGrammar, steps: list[int | bytes], error: LimitExceeded | None, stop: list[int] | None = None
) -> "Matcher":
    """Unpickling a `Matcher`: replay its steps on the compiled grammar, then restore its sticky error."""
    m = Matcher(compiled, stop_token_ids=stop)
    eos = m._eos_ids
    for step in steps:
        if error is not None and type(step) is int and step in eos:
            m.error = error  # EOS ended a matcher after its error: the error comes first
        ok = m.accept_bytes(step) if type(step) is bytes else m.accept_token(step)
        if not ok:
            if m.error is None:
                raise ValueError(f"cannot replay step {step!r} of a pickled matcher on this compiled grammar")
            return m  # the replay hit a limit: the matcher is in the error state there
    if error is not None:
        m.error = error
    return m


class Matcher:
    """Tracks one generated sequence against a compiled grammar.

    `copy.copy`, `copy.deepcopy` and `copy()` give independent matchers sharing the
    compiled grammar; pickling ships the compiled grammar and the accepted steps.
    """

    def __init__(self, compiled: CompiledGrammar, *, stop_token_ids: Iterable[int] | None = None) -> None:
        """`stop_token_ids`: the ids that end the text for this matcher instead of the vocabulary's EOS ids
        (special or unused ids inside the compiled width; ValueError for a text token, `TokenRejected`
        for an id outside)."""
        if not isinstance(compiled, CompiledGrammar):
            raise TypeError(f"Matcher needs a pda.CompiledGrammar (from pda.compile), got {type(compiled).__name__}")
        self.compiled = compiled
        self._history: list[tuple[Node, int]] = [compiled.initial_state()]
        self._terminated = False
        self._steps: list[int | bytes] = []
        self.error: LimitExceeded | None = None
        self._stop: tuple[np.ndarray, np.ndarray] | None = None  # (words, bits) of own stop ids
        self._eos_ids: frozenset[int] = compiled.vocab.eos_ids
        self._eos_mask: np.ndarray = compiled.eos_mask
        if stop_token_ids is not None:
            self._set_stop_ids(stop_token_ids)

    def _set_stop_ids(self, stop_token_ids: Iterable[int]) -> None:
        vocab = self.compiled.vocab
        ids = frozenset(self._token_id(i) for i in stop_token_ids)
        text = [i for i in sorted(ids) if i < vocab.size and vocab.tokens[i] is not None]
        if text:
            raise ValueError(f"stop token {vocab.describe(text[0])} is a text token; stop ids must be special or unused ids")
        mask = np.zeros(self.compiled.mask_words, dtype=np.int32)
        if ids:
            bits = np.zeros(self.compiled.mask_words * 32, dtype=bool)
            bits[sorted(ids)] = True
            mask = np.packbits(bits, bitorder="little").view(np.int32)
        words = np.flatnonzero(mask)
        self._eos_ids, self._eos_mask, self._stop = ids, mask, (words, mask[words])

    # --- state ------------------------------------------------------------------------

    def reset(self) -> None:
        """Back to the start of the grammar."""
        del self._history[1:]
        self._steps.clear()
        self._terminated = False
        self.error = None

    def copy(self) -> "Matcher":
        """An independent matcher in the same state (cheap: shares the compiled grammar)."""
        other = Matcher.__new__(Matcher)
        other.compiled = self.compiled
        other._history = list(self._history)
        other._terminated = self._terminated
        other._steps = list(self._steps)
        other.error = self.error
        other._stop, other._eos_ids, other._eos_mask = self._stop, self._eos_ids, self._eos_mask
        return other

    def __copy__(self) -> "Matcher":
        return self.copy()

    def __deepcopy__(self, memo: dict) -> "Matcher":
        return self.copy()  # parser nodes are interned and immutable: sharing them is the deep copy

    def __reduce__(self) -> tuple:
        stop = sorted(self._eos_ids) if self._stop is not None else None
        return _restore, (self.compiled, list(self._steps), self.error, stop)

    def is_terminated(self) -> bool:
        """True once EOS has been accepted."""
        return self._terminated

    def can_end(self) -> bool:
        """Whether the text so far is a whole sentence (EOS is allowed now); True in the error state."""
        if self._terminated:
            return False
        if self.error is not None:
            return True
        node, q = self._history[-1]
        try:
            return self.compiled.masks.can_end(node, q)
        except LimitExceeded as exc:
            self.error = exc
            return True

    @property
    def num_tokens(self) -> int:
        """Steps accepted: tokens, EOS and `accept_bytes` calls."""
        return len(self._steps)

    def rollback(self, n: int = 1) -> None:
        """Undo the last `n` accepted steps (EOS included), e.g. after a rejected speculation."""
        n = n if type(n) is int else _as_int(n, "rollback count")
        if n < 0 or n > len(self._steps):
            raise ValueError(f"cannot roll back {n} tokens: {len(self._steps)} accepted")
        self.error = None
        for _ in range(n):
            step = self._steps.pop()
            if self._terminated and type(step) is int and step in self._eos_ids:
                self._terminated = False
            else:
                self._history.pop()

    # --- tokens -----------------------------------------------------------------------

    def _token_id(self, token_id: Any) -> int:
        """A token id checked at the boundary: an int (TypeError otherwise) inside the compiled width."""
        if type(token_id) is not int:
            token_id = _as_int(token_id, "token id")
        if not 0 <= token_id < self.compiled.vocab_size:
            raise TokenRejected(
                f"token id {token_id} is outside the vocabulary (0..{self.compiled.vocab_size - 1})"
            )
        return token_id

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token. False (state unchanged) if the grammar does not allow it here.

        Raises `TokenRejected` for an id outside the vocabulary or a special token other
        than EOS, TypeError for an id that is not an integer. In the error state EOS is
        accepted and ends the text; any other token is refused.
        """
        compiled = self.compiled
        if type(token_id) is not int or not 0 <= token_id < compiled.vocab_size:
            token_id = self._token_id(token_id)
        if token_id in self._eos_ids:
            if not self.can_end():
                return False
            self._terminated = True
            self._steps.append(token_id)
            return True
        vocab = compiled.vocab
        data = vocab.tokens[token_id] if token_id < vocab.size else None
        if data is None:
            raise TokenRejected(f"token {vocab.describe(token_id) if token_id < vocab.size else token_id} is a special or unused id, never part of the text")
        return self._advance(data, token_id)  # a step's one hook (`pda.reasoning` extends it)

    def accept_tokens(self, token_ids: Iterable[int]) -> bool:
        """Advance by several tokens, all or none (a serving engine's accepted draft).

        False, with the tokens unaccepted, if any of them is refused here, including ids no
        text can hold (special ids other than a stop id, ids past the compiled width): a
        draft may hold anything, so nothing is raised for those. A resource limit hit on
        the way sets `error` as `accept_token` does. TypeError for an id that is not an integer.
        """
        token_ids = _as_ints(token_ids)
        error = self.error
        accepted = self._accept_prefix(token_ids)
        if len(accepted) == len(token_ids):
            return True
        raised = self.error  # a limit this call hit stays, as after `accept_token`
        self.rollback(len(accepted))
        self.error = raised if raised is not None else error
        return False

    def validate_tokens(self, token_ids: Iterable[int]) -> list[int]:
        """The longest prefix of `token_ids` the grammar allows from here, as a list; the state is unchanged.

        Stops before the first refused id, including ids no text can hold (nothing is
        raised for those: a speculative draft may hold padding or special ids). A stop id
        ends the prefix's text, so nothing after it is allowed. TypeError for an id that is
        not an integer.
        """
        error = self.error
        prefix = self._accept_prefix(_as_ints(token_ids))
        self.rollback(len(prefix))
        self.error = error
        return prefix

    def _accept_prefix(self, token_ids: list[int]) -> list[int]:
        """Accept tokens up to the first refused one (ids no text holds are refused, not raised); those accepted."""
        for n, token_id in enumerate(token_ids):
            try:
                if not self.accept_token(token_id):
                    return token_ids[:n]
            except TokenRejected:
                return token_ids[:n]
        return token_ids

    def accept_bytes(self, data: bytes | str) -> bool:
        """Advance by raw text (e.g. forced bytes) as one step; False (unchanged) if not viable."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        elif not isinstance(data, bytes):
            if not isinstance(data, (bytearray, memoryview)):
                raise TypeError(f"accept_bytes takes bytes or str, got {type(data).__name__}")
            data = bytes(data)
        return self._advance(data, data)

    def _advance(self, data: bytes, step: int | bytes) -> bool:
        """Feed a step's bytes; on success record it (a token id, or the bytes themselves)."""
        if self._terminated or self.error is not None or not data:
            return False
        node, q = self._history[-1]
        try:
            nxt = self.compiled.scanner.feed(node, q, data)
        except LimitExceeded as exc:
            self.error = exc
            return False
        if nxt is None:
            return False
        self._history.append(nxt)
        self._steps.append(step)
        return True

    # --- masks ------------------------------------------------------------------------

    def _mask(self) -> np.ndarray:
        """The packed allowed-token mask for the current state, EOS included.

        After EOS, or once a resource limit was hit (`self.error`, sticky until
        `reset`/`rollback`), only EOS is allowed, so generation stops cleanly.
        """
        masks = self.compiled.masks
        if self._terminated or self.error is not None:
            return self._eos_mask
        node, q = self._history[-1]
        try:
            if self._stop is None:
                return masks.step_mask(node, q)
            text = masks.text_mask(node, q)
            return text | self._eos_mask if masks.can_end(node, q) else text
        except LimitExceeded as exc:
            self.error = exc
            return self._eos_mask

    def fill_bitmask(self, bitmask: Any, row: int = 0) -> None:
        """Write the allowed-token mask into row `row` of an int32 or uint32 `[batch, ceil(V/32)]` array or tensor.

        Bit `i % 32` of word `i // 32` is token i. Words past the compiled width are zeroed.
        TypeError for another dtype or a row that is not an integer; `BitmaskRowError` (a ValueError
        and an IndexError) for a row outside.
        """
        if type(row) is not int:
            row = _as_int(row, "row")
        if type(bitmask) is not np.ndarray:
            bitmask = _numpy_view(bitmask)
            if type(bitmask) is not np.ndarray:
                self._fill_general(bitmask, row)
                return
        try:
            # The usual case, one `pda.rows` call straight into the row. Hot path (~0.3 µs a step
            # with the compiled writer): one call to the masks' owner, which reads its own memos.
            if self._terminated or self.error is not None:
                copy_row(bitmask, row, self._eos_mask)
                return
            node, q = self._history[-1]
            if self._stop is None:
                copy_row(bitmask, row, self.compiled.masks.row_source(node, q))
                return
            masks = self.compiled.masks
            masks.write_text_row(bitmask, row, node, q)
            if masks.can_end(node, q):
                words, bits = self._stop
                bitmask[row, words] |= bits
            return
        except LimitExceeded as exc:
            self.error = exc
        except (BitmaskLayoutError, IndexError, OverflowError):  # strided, uint32, read-only, a bad or huge row: the general path
            pass
        self._fill_general(bitmask, row)

    def _fill_general(self, bitmask: Any, row: int) -> None:
        """`fill_bitmask` for any 2-D int32/uint32 numpy array or torch tensor (any device or layout)."""
        torch = None
        if isinstance(bitmask, np.ndarray):
            if bitmask.dtype not in _BITMASK_DTYPES:
                raise TypeError(f"the bitmask must be int32 or uint32, got {bitmask.dtype}")
            unsigned = bitmask.dtype == np.uint32
            if not bitmask.flags.writeable:
                raise ValueError("the bitmask is read-only")
        else:
            torch = _torch_of(bitmask)
            if torch is None:
                raise TypeError(f"the bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")
            unsigned = bitmask.dtype == getattr(torch, "uint32", None)
            if bitmask.dtype != torch.int32 and not unsigned:
                raise TypeError(f"the bitmask must be int32 or uint32, got {bitmask.dtype}")
        if bitmask.ndim != 2:
            raise ValueError(f"the bitmask must be 2-D [batch, words], got shape {tuple(bitmask.shape)}")
        if not 0 <= row < bitmask.shape[0]:
            raise BitmaskRowError(f"row {row} is outside a bitmask of {bitmask.shape[0]} rows")
        mask = self._mask()
        if unsigned:
            mask = mask.view(np.uint32)  # the same bits in the caller's dtype
        width = bitmask.shape[1]
        n = min(width, len(mask))
        if torch is None:
            bitmask[row, :n] = mask[:n]
            bitmask[row, n:] = 0
            return
        bitmask[row, :n].copy_(torch.from_numpy(mask[:n]))
        if n < width:
            bitmask[row, n:] = 0

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        """`fill_bitmask` under the name serving engines call (XGrammar's)."""
        self.fill_bitmask(bitmask, index)

    def allowed_token_ids(self) -> np.ndarray:
        """The allowed token ids, ascending (EOS ids included where the text can end)."""
        bits = np.unpackbits(self._mask().view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self.compiled.vocab_size])

    def is_allowed(self, token_id: int) -> bool:
        """Whether one token is allowed now (reads the mask; no state change).

        `TokenRejected` for an id outside the compiled width, TypeError for a non-integer.
        """
        token_id = self._token_id(token_id)
        mask = self._mask()
        return bool((int(mask[token_id >> 5]) >> (token_id & 31)) & 1)

    def forced_bytes(self) -> bytes:
        """The bytes that must come next whatever is generated (jump-forward), possibly empty.

        Stops where two or more bytes are possible, where the text may end, after
        `Limits.max_forced_bytes`, or at a limit (which sets the error state): empty
        after EOS and in the error state.
        """
        if self._terminated or self.error is not None:
            return b""
        scanner = self.compiled.scanner
        budget = self.compiled.limits.max_forced_bytes
        node, q = self._history[-1]
        out = bytearray()
        try:
            while len(out) < budget and not scanner.can_end(node, q):
                only = scanner.only_byte(node, q)
                if only is None:
                    break
                out.append(only[0])
                node, q = only[1]
        except LimitExceeded as exc:
            self.error = exc
            return b""
        return bytes(out)


def _torch_of(bitmask: Any) -> Any:
    """The torch module if `bitmask` is a torch tensor (torch imported only then), else None."""
    if type(bitmask).__module__.split(".")[0] != "torch":
        return None
    import torch

    return torch if isinstance(bitmask, torch.Tensor) else None


def fill_bitmasks(
    matchers: Sequence[Matcher], bitmask: Any, rows: Sequence[int] | None = None, *, threads: int = 1
) -> None:
    """Fill row `rows[i]` (default: i) of `bitmask` for each of `matchers`: one batch's step.

    The same as `matchers[i].fill_bitmask(bitmask, rows[i])` for every i. Each row's mask is
    found (computed on a miss) first, then every row of an int32 C-contiguous bitmask is
    written in one call (`pda.rows.write_rows`) from up to `threads` threads: one per
    `ROW_THREAD_MIN_BYTES` of rows, since starting a thread costs more than a smaller copy
    saves; the interpreter lock is released while more than one writes. Other layouts, and
    matchers with their own stop ids, go through `fill_bitmask`. ValueError when a row
    appears twice or `rows` and `matchers` differ in length; `BitmaskRowError` for a row
    outside the bitmask.
    """
    if rows is None:
        rows = range(len(matchers))
    elif len(rows) != len(matchers):
        raise ValueError(f"{len(matchers)} matchers but {len(rows)} rows")
    threads = threads if type(threads) is int else _as_int(threads, "threads")
    if not 1 <= threads <= MAX_ROW_THREADS:
        raise ValueError(f"threads must be 1 to {MAX_ROW_THREADS}, got {threads}")
    if type(bitmask) is not np.ndarray:
        bitmask = _numpy_view(bitmask)
    if type(bitmask) is not np.ndarray or bitmask.dtype != _INT32 or bitmask.ndim != 2:
        _fill_each(matchers, bitmask, rows)
        return
    n_rows = bitmask.shape[0]
    direct_rows: list[int] = []
    sources: list[RowSource | None] = []
    general: list[tuple[Matcher, int]] = []
    add_row, add_source = direct_rows.append, sources.append
    for matcher, row in zip(matchers, rows):
        if type(row) is not int:
            row = _as_int(row, "row")
        if type(matcher) is not Matcher or not 0 <= row < n_rows or matcher._stop is not None:
            general.append((matcher, row))  # a subclass fills its own rows; a row outside raises there
            continue
        add_row(row)
        if matcher._terminated or matcher.error is not None:
            add_source(matcher._eos_mask)
            continue
        node, q = matcher._history[-1]
        try:
            add_source(matcher.compiled.masks.row_source(node, q))
        except LimitExceeded as exc:
            matcher.error = exc
            add_source(matcher._eos_mask)
    if general:
        check_distinct(direct_rows + [row for _, row in general])
    if threads > 1:
        threads = max(1, min(threads, len(direct_rows) * bitmask.shape[1] * 4 // ROW_THREAD_MIN_BYTES))
    try:
        write_rows(bitmask, direct_rows, sources, threads)
    except BitmaskLayoutError:  # strided or read-only: every row through `fill_bitmask` (masks found above stay memoised)
        _fill_each(matchers, bitmask, rows)
        return
    if general:
        _fill_each([m for m, _ in general], bitmask, [row for _, row in general])


# `fill_bitmasks` starts a thread per this many bytes of rows to write (~440 Qwen2 rows), up to its `threads`. A
# thread's start and join cost 21-39 us here (2 shared cores), a Qwen2 row's copy (19 KB) 0.3-0.5 us: writing 8, 64,
# 256, 512, 1,024 and 4,096 such rows from two threads ran at 0.14-0.17x, 0.60-0.67x, 0.77-0.78x, 0.82-0.86x,
# 0.79-1.67x and 1.21-1.29x the speed of one (`pda.rows.write_rows`, best of 15, 2-4 runs each).
ROW_THREAD_MIN_BYTES = 8 << 20


def _fill_each(matchers: Sequence[Matcher], bitmask: Any, rows: Sequence[int]) -> None:
    """`fill_bitmask` on each (matcher, row), after checking no row appears twice."""
    rows = [row if type(row) is int else _as_int(row, "row") for row in rows]
    check_distinct(rows)
    for matcher, row in zip(matchers, rows):
        matcher.fill_bitmask(bitmask, row)
