"""SGLang grammar backend over pda: `register()`, then launch SGLang with `--grammar-backend pda`.

SGLang (tested with 0.5.23) takes out-of-tree grammar backends through
`register_grammar_backend(name, init)`: `init(server_args, tokenizer, vocab_size,
eos_token_ids)` returns a `BaseGrammarBackend`, whose `dispatch_*` methods compile a
request's constraint into a `BaseGrammarObject`. This module provides both over
pda:

- `PdaGrammarBackend` compiles `json` (a JSON Schema; `$$ANY$$` is any JSON value),
  `regex` and `ebnf` (GBNF-style text) keys with the request's vocabulary and logits
  width; a constraint pda refuses becomes SGLang's `InvalidGrammarObject` with pda's
  message. `structural_tag` keys (XGrammar's format, either form) go to
  `Grammar.from_structural_tag`.
- `PdaGrammar` follows SGLang's contract: `accept_token` raises on a token the
  grammar refuses (SGLang aborts the request) and ignores tokens after termination;
  `copy()` is a fresh matcher on the same compiled grammar (the cache holds
  pristine templates); jump-forward returns the bytes the grammar forces
  (`Matcher.forced_bytes`) as text, and `jump_and_retokenize` rolls back to the
  common prefix of the old and new output ids and accepts the rest.

Masks are pda's packed int32 rows (`[batch, ceil(V/32)]`, bit i%32 of word i//32),
the layout SGLang's XGrammar and llguidance backends share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarRow,
    InvalidGrammarObject,
    register_grammar_backend,
)

from pda.compiler import CompiledGrammar, compile
from pda.errors import PdaError
from pda.grammar.grammar import Grammar
from pda.integrations.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace
from pda.matcher import Matcher, fill_bitmasks
from pda.vocab import Vocabulary

ANY_JSON = "$$ANY$$"  # SGLang's key for "any JSON value" (response_format json_object)


class PdaGrammar(BaseGrammarObject):
    """One request's constraint: a pda `Matcher` on a compiled grammar shared by the requests that use it."""

    def __init__(self, compiled: CompiledGrammar) -> None:
        super().__init__()
        self.compiled = compiled
        self.matcher = Matcher(compiled)

    def accept_token(self, token: int) -> None:
        """Advance by one token; ValueError when the grammar refuses it (tokens after termination are ignored)."""
        if self.matcher.is_terminated():
            return
        self.current_token = token
        try:
            accepted = self.matcher.accept_token(token)
        except PdaError as error:
            raise ValueError(f"pda: token {token} refused: {error}") from error
        if not accepted:
            raise ValueError(f"pda: token {self.compiled.vocab.describe(token)} is not allowed here")
        self.finished = self.matcher.is_terminated()

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)
        self.finished = self.matcher.is_terminated()

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> Any:
        return allocate_token_bitmask(batch_size, vocab_size, torch_tensor=True)

    def fill_vocab_mask(self, vocab_mask: Any, idx: int) -> None:
        self.matcher.fill_bitmask(vocab_mask, idx)

    @staticmethod
    def fill_vocab_mask_batched(entries: list[GrammarRow], vocab_mask: Any) -> None:
        """All of a batch's pda rows in one `pda.fill_bitmasks` call; other backends' rows their own way."""
        ours = [e for e in entries if isinstance(e.grammar, PdaGrammar)]
        fill_bitmasks([e.grammar.matcher for e in ours], vocab_mask, [e.row for e in ours])
        BaseGrammarObject.fill_vocab_mask_batched([e for e in entries if not isinstance(e.grammar, PdaGrammar)],
                                                  vocab_mask)

    @staticmethod
    def reset_vocab_mask(vocab_mask: Any) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: Any, device: Any) -> Any:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: Any, vocab_mask: Any) -> None:
        apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> "PdaGrammar":
        """A fresh request on the same compiled grammar (SGLang copies its cached templates)."""
        return PdaGrammar(self.compiled)

    def try_jump_forward(self, tokenizer: Any) -> tuple[list[int], str] | None:
        """The text the grammar forces next, if it is whole UTF-8 (SGLang re-tokenises it)."""
        forced = self.matcher.forced_bytes()
        try:
            text = forced.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return ([], text) if text else None

    def jump_forward_str_state(self, helper: tuple[list[int], str]) -> tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: Sequence[int], new_output_ids: Sequence[int], next_state: int) -> None:
        """Roll back to the common prefix of the old and new output ids, then accept the new ones."""
        common = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            common += 1
        if common < len(old_output_ids):
            self.rollback(len(old_output_ids) - common)
        for token in new_output_ids[common:]:
            self.accept_token(token)


class PdaGrammarBackend(BaseGrammarBackend):
    """Compiles SGLang's constraint keys with pda for one tokenizer, logits width and set of EOS ids."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_ids: Iterable[int] | None = None, *,
                 any_whitespace: bool = True) -> None:
        super().__init__()
        eos = sorted(set(eos_token_ids or ())) or None
        self.vocab = Vocabulary.from_hf(tokenizer, eos_ids=eos)
        self.vocab_size = vocab_size
        self.whitespace = "flexible" if any_whitespace else "compact"

    def _compiled(self, kind: str, key_string: str, build: Any) -> BaseGrammarObject:
        try:
            return PdaGrammar(compile(build(), self.vocab, mask_width=max(self.vocab_size, self.vocab.size)))
        except PdaError as error:
            return InvalidGrammarObject(f"pda cannot serve this {kind}: {error}")

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        if key_string == ANY_JSON:
            return self._compiled("JSON", key_string, lambda: Grammar.load("json"))
        return self._compiled("JSON Schema", key_string,
                              lambda: Grammar.from_json_schema(key_string, whitespace=self.whitespace))

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._compiled("regex", key_string, lambda: Grammar.from_regex(key_string))

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        return self._compiled("EBNF grammar", key_string, lambda: Grammar.from_gbnf(key_string))

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return self._compiled("structural tag", key_string, lambda: Grammar.from_structural_tag(key_string))


def register(name: str = "pda") -> None:
    """Make `--grammar-backend NAME` (default `pda`) build a `PdaGrammarBackend` in this process."""

    def init(server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Iterable[int] | None) -> PdaGrammarBackend:
        any_whitespace = not getattr(server_args, "constrained_json_disable_any_whitespace", False)
        return PdaGrammarBackend(tokenizer, vocab_size, eos_token_ids, any_whitespace=any_whitespace)

    register_grammar_backend(name, init)
