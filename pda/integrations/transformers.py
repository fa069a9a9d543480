"""transformers integration: a `LogitsProcessor` and a `StoppingCriteria` backed by pda matchers.

`model.generate(..., logits_processor=[GrammarLogitsProcessor(cg)])` constrains
every row of the batch. transformers hands a logits processor only `input_ids`
and the scores, so the processor reconstructs each row's state from
`input_ids` itself:

- The prompt length is inferred on the first call (every row's prompt, left
  padding included, is `input_ids.shape[1]` long then).
- On each later call every row is matched to the row of the previous call it
  shares the longest prefix with (at least the prompt): its state is that row's,
  rolled back to the shared prefix and advanced by the rest. That covers sampling
  and greedy decoding (one token more), the stopping criterion (the same ids
  again), beam search (rows reordered and forked between steps; a source used by
  several rows is forked with `Matcher.copy()`), and assisted generation and
  prompt lookup (several draft tokens at once, rejected ones rolled back on the
  next call). The common cases are one vectorised comparison.
- A call that shares no prompt with the previous one (a new `generate`) starts
  over. A new `generate` whose prompt extends the previous call's ids (the last
  output fed back) looks like a continuation: call `reset()` between such calls.
- A row whose matcher has terminated (EOS accepted) ignores what follows
  (transformers pads finished rows); its mask allows only EOS.
- A row whose text was complete and that goes on with a token the grammar does
  not take (the padding after the stopping criterion ended it) is finished: its
  mask allows only EOS, so sampling for it stays well defined.
- Any other row that holds a token its grammar rejects is dead: this happens only
  in beam search, where `topk` can pick a -inf continuation when fewer tokens are
  allowed than the beams it keeps. Its mask is empty (all scores -inf) so it can
  never win; it never raises.

With `num_return_sequences=n` or `num_beams=n` the flat batch has `n` rows per
prompt; a list of grammars (one per prompt) is spread over them in order.
Logits wider than the vocabulary are handled: ids past the compiled width are
never allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from transformers import LogitsProcessor, StoppingCriteria

from pda.compiler import CompiledGrammar
from pda.errors import PdaError, TokenRejected
from pda.integrations.bitmask import bitmask_width
from pda.matcher import Matcher


def apply_packed_bitmask_(scores: torch.Tensor, bitmask: np.ndarray) -> None:
    """Set the scores of tokens outside the packed int32 `bitmask` to -inf, in place.

    On CPU the packed words are unpacked by numpy (`unpackbits` on a byte view,
    a single pass over V/8 bytes) straight into the *disallowed* set and handed to
    `masked_fill_` without a copy; on an accelerator the packed words travel
    (V/8 bytes per row) and are unpacked there with shifts. Both beat building a
    dense bool mask in torch on the host (see bench/logits_processor_bench.py).
    """
    rows, vocab = scores.shape
    if scores.device.type == "cpu":
        banned = np.unpackbits((~bitmask).view(np.uint8), axis=-1, bitorder="little")
        banned_t = torch.from_numpy(banned[:, :vocab].view(np.bool_))
        if banned_t.shape[1] < vocab:  # scores wider than the mask: the extra ids are banned
            scores[:, banned_t.shape[1]:] = float("-inf")
            scores[:, : banned_t.shape[1]].masked_fill_(banned_t, float("-inf"))
        else:
            scores.masked_fill_(banned_t, float("-inf"))
        return
    packed = torch.from_numpy(bitmask).to(scores.device, non_blocking=True)
    shifts = torch.arange(32, device=scores.device, dtype=torch.int32)
    allowed = ((packed.unsqueeze(-1) >> shifts) & 1).bool().reshape(rows, -1)
    n = min(vocab, allowed.shape[1])
    if n < vocab:
        scores[:, n:] = float("-inf")
    scores[:, :n].masked_fill_(~allowed[:, :n], float("-inf"))


class _RowState:
    """One row's matcher, the tokens the row holds after its prompt, and how it ended, if it did without EOS.

    `accepted`: how many of `tokens` the matcher took (the rest came after the row ended).
    `finished`: the text was complete and the row went on with a token the grammar does
    not take (transformers pads a row the stopping criterion ended); only EOS is allowed
    from then on. `dead`: the row holds a token its grammar rejects before its text was
    complete (a -inf beam-search candidate); nothing is allowed.
    """

    __slots__ = ("matcher", "tokens", "accepted", "dead", "finished")

    def __init__(self, matcher: Matcher) -> None:
        self.matcher = matcher
        self.tokens: list[int] = []
        self.accepted = 0
        self.dead = False
        self.finished = False

    def fork(self) -> "_RowState":
        other = _RowState(self.matcher.copy())
        other.tokens, other.accepted = list(self.tokens), self.accepted
        other.dead, other.finished = self.dead, self.finished
        return other

    def move_to(self, tokens: list[int], common: int) -> None:
        """Hold `tokens` (the row after its prompt), of which the first `common` are this state's own."""
        if common < len(self.tokens):
            if common < self.accepted:  # back before the token that ended the row, if one did
                self.matcher.rollback(self.accepted - common)
                self.accepted = common
                self.dead = self.finished = False
            del self.tokens[common:]
        for token_id in tokens[common:]:
            self.advance(token_id)

    def advance(self, token_id: int) -> None:
        """Feed the row's next token; ended rows ignore padding."""
        self.tokens.append(token_id)
        if self.dead or self.finished or self.matcher.is_terminated():
            return
        try:
            ok = self.matcher.accept_token(token_id)
        except TokenRejected:
            ok = False
        if ok:
            self.accepted += 1
        elif self.matcher.can_end():
            self.finished = True
        else:
            self.dead = True


class GrammarLogitsProcessor(LogitsProcessor):
    """Masks each row's scores to the tokens its grammar allows next.

    `grammars` is one `CompiledGrammar` for every row, or a list with one per
    prompt (rows are spread evenly: `num_beams`/`num_return_sequences` rows per
    prompt). Compile with `mask_width=model.config.vocab_size` when the model's
    logits are wider than the tokenizer (unneeded: wider logits are masked anyway).
    One processor serves one `generate` call at a time.
    """

    def __init__(self, grammars: CompiledGrammar | Sequence[CompiledGrammar]) -> None:
        self.grammars: list[CompiledGrammar] = (
            [grammars] if isinstance(grammars, CompiledGrammar) else list(grammars)
        )
        if not self.grammars:
            raise PdaError("GrammarLogitsProcessor needs at least one compiled grammar")
        self.prompt_length: int | None = None
        self._rows: list[_RowState] = []
        self._ids: torch.Tensor | None = None
        self._bitmask: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the current generation; the next call infers a new prompt length."""
        self.prompt_length = None
        self._rows = []
        self._ids = None

    # --- keeping matchers in step with input_ids -----------------------------------------

    def _grammar_for_row(self, row: int, n_rows: int) -> CompiledGrammar:
        if len(self.grammars) == 1:
            return self.grammars[0]
        if n_rows % len(self.grammars):
            raise PdaError(
                f"{len(self.grammars)} grammars cannot be spread over a batch of {n_rows} rows "
                "(expected a multiple: one grammar per prompt)"
            )
        return self.grammars[row // (n_rows // len(self.grammars))]

    def _start(self, input_ids: torch.Tensor) -> None:
        n = input_ids.shape[0]
        self.prompt_length = input_ids.shape[1]
        self._rows = [_RowState(Matcher(self._grammar_for_row(r, n))) for r in range(n)]
        self._ids = input_ids.clone()

    def _match(self, input_ids: torch.Tensor) -> list[tuple[int, int]] | None:
        """Per row: the previous call's row it shares the longest prefix with, and that prefix's length.

        None when some row shares less than the prompt with every previous row (a new call).
        """
        prev = self._ids
        if prev is None or self.prompt_length is None or input_ids.shape[1] < self.prompt_length:
            return None
        n_prev, n_new = prev.shape[1], input_ids.shape[1]
        if n_new in (n_prev, n_prev + 1) and input_ids.shape[0] == prev.shape[0]:
            if bool((input_ids[:, :n_prev] == prev[:, :n_new]).all()):  # the usual step: each row its own source
                return [(r, min(n_prev, n_new)) for r in range(prev.shape[0])]
        n = min(n_prev, n_new)
        same = input_ids[:, None, :n] == prev[None, :, :n]  # [rows, previous rows, positions]
        shared = same.to(torch.int8).cumprod(dim=2).sum(dim=2)  # common prefix lengths
        length, source = shared.max(dim=1)
        if bool((length < self.prompt_length).any()):
            return None
        return list(zip(source.tolist(), length.tolist()))

    def sync(self, input_ids: torch.Tensor) -> list[_RowState]:
        """Bring every row's matcher up to date with `input_ids` (idempotent for the same ids)."""
        input_ids = input_ids.detach().to("cpu")
        match = self._match(input_ids)
        if match is None:
            self._start(input_ids)
            return self._rows
        used = [0] * len(self._rows)
        rows = []
        for source, _ in match:
            state = self._rows[source]
            rows.append(state.fork() if used[source] else state)
            used[source] += 1
        prompt = self.prompt_length
        for state, (_, common), ids in zip(rows, match, input_ids.tolist()):  # every fork is taken above
            state.move_to(ids[prompt:], common - prompt)
        self._rows = rows
        self._ids = input_ids
        return rows

    # --- masking -------------------------------------------------------------------------

    def fill_bitmask(self, input_ids: torch.Tensor, width: int) -> np.ndarray:
        """The packed masks of every row for the state `input_ids` describes (int32 `[rows, ceil(width/32)]`)."""
        rows = self.sync(input_ids)
        words = bitmask_width(width)
        bitmask = self._bitmask
        if bitmask is None or bitmask.shape != (len(rows), words):
            bitmask = self._bitmask = np.empty((len(rows), words), dtype=np.int32)
        for r, state in enumerate(rows):
            if state.dead:
                bitmask[r] = 0
            elif state.finished:
                eos = state.matcher.compiled.eos_mask[:words]
                bitmask[r, : len(eos)] = eos
                bitmask[r, len(eos):] = 0
            else:
                state.matcher.fill_bitmask(bitmask, r)
        return bitmask

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        bitmask = self.fill_bitmask(input_ids, scores.shape[-1])
        apply_packed_bitmask_(scores, bitmask)
        return scores

    # --- for the stopping criterion and callers -------------------------------------------

    def matchers(self) -> list[Matcher]:
        """The current rows' matchers (after the last call)."""
        return [s.matcher for s in self._rows]

    def row_done(self, input_ids: torch.Tensor) -> list[bool]:
        """Per row: its matcher terminated, or its text is complete and nothing but EOS may follow."""
        out = []
        for state in self.sync(input_ids):
            m = state.matcher
            out.append(state.finished or (not state.dead and (m.is_terminated() or _only_eos(m))))
        return out


def _only_eos(m: Matcher) -> bool:
    """Whether EOS is the one thing the grammar allows now (a complete text that cannot grow)."""
    if not m.can_end():
        return False
    allowed = m.allowed_token_ids()
    return bool(np.isin(allowed, list(m.compiled.vocab.eos_ids)).all())


class GrammarStoppingCriteria(StoppingCriteria):
    """Ends a row when its grammar is done: EOS accepted, or a complete text nothing can extend.

    Share the processor passed to `logits_processor`, so both read the same matchers.
    A row ended here without an EOS token is still a complete sentence.
    """

    def __init__(self, processor: GrammarLogitsProcessor) -> None:
        self.processor = processor

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        done = self.processor.row_done(input_ids)
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)
