"""vLLM structured-output backend over pda: `enable()`, then build `vllm.LLM(...)` in the same process.

vLLM (tested with 0.32.0) picks its structured-output backend from a closed list
(`StructuredOutputsConfig.backend`: auto, xgrammar, guidance, outlines,
lm-format-enforcer) in two places, and has no registry for another one:

- the front end validates each request for the chosen backend
  (`SamplingParams._validate_structured_outputs`) and records the backend's name in it;
- the engine core's `StructuredOutputManager.grammar_init` builds the backend object,
  `Backend(vllm_config, tokenizer=..., vocab_size=...)`, on the first structured request.

`enable()` wraps both, and nothing else: validation parses the constraint with pda
(a constraint pda refuses is a `VLLMValidationError` with pda's message, before the
request is queued) and names the backend `pda`; the manager's first
`grammar_init` builds a `PdaBackend`, and vLLM's own code does the rest (compilation in
its thread pool, masks, speculative drafts, rollback). The wrapped functions are
private to vLLM and may change in any release. The patch lives in this process: an
engine core in a forked process inherits it (vLLM's default start method), a spawned one
does not; there, call `enable()` from a `vllm.general_plugins` entry point.

- `PdaBackend` compiles JSON (a JSON Schema), JSON_OBJECT (any JSON object, as vLLM's
  XGrammar and llguidance backends read it), REGEX, GRAMMAR (Lark, or GBNF when a
  line holds `::=`: vLLM's own test, `grammar_is_likely_lark`) and CHOICE; a structural
  tag is refused (not served yet). Vocabularies are built once per tokenizer; the mask
  width is vLLM's vocabulary size (the model's logits, padding included).
- `PdaGrammar` follows `StructuredOutputGrammar`'s contract over one `pda.Matcher`:
  `accept_tokens` is all or nothing (False, state unchanged, when any token is refused:
  vLLM then ends the request) and ignores tokens after the one that terminates;
  `validate_tokens` returns a draft's longest allowed prefix and never raises on ids no
  text holds (padding past the tokenizer, special ids); the request's stop ids
  (`SamplingParams.all_stop_token_ids`) are the matcher's own `stop_token_ids`.

vLLM is imported where it is used, but for the two base classes: without vLLM this
module still loads (pda's tests import every module), and nothing in it works.
"""

from __future__ import annotations

import functools
import json
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

try:
    from vllm.v1.structured_output.backend_types import StructuredOutputBackend, StructuredOutputGrammar
except ModuleNotFoundError:  # no vLLM here: the module loads, its classes are unusable
    StructuredOutputBackend = StructuredOutputGrammar = object

from pda.compiler import CompiledGrammar, compile
from pda.errors import PdaError
from pda.grammar.grammar import Grammar
from pda.integrations.bitmask import allocate_token_bitmask
from pda.matcher import Matcher
from pda.vocab import Vocabulary

if TYPE_CHECKING:
    import torch
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output import StructuredOutputManager
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

BACKEND_NAME = "pda"
ANY_JSON_OBJECT = '{"type": "object"}'  # what vLLM's own backends compile for JSON_OBJECT

# vLLM's StructuredOutputOptions, by name.
_KINDS = {"JSON": "JSON Schema", "JSON_OBJECT": "JSON object", "REGEX": "regex", "GRAMMAR": "grammar",
          "CHOICE": "choice", "STRUCTURAL_TAG": "structural tag"}


@functools.lru_cache(maxsize=256)
def grammar_for(request_type: StructuredOutputOptions, spec: str, *, compact: bool = False) -> Grammar:
    """The pda grammar of one vLLM constraint (memoised: the front end and the engine parse it once).

    `compact` is vLLM's `disable_any_whitespace` for JSON. `PdaError` when pda refuses it.
    """
    from vllm.v1.structured_output.utils import grammar_is_likely_lark

    kind = request_type.name
    whitespace = "compact" if compact else "flexible"
    if kind == "JSON":
        return Grammar.from_json_schema(spec, whitespace=whitespace)
    if kind == "JSON_OBJECT":
        return Grammar.from_json_schema(ANY_JSON_OBJECT, whitespace=whitespace)
    if kind == "REGEX":
        return Grammar.from_regex(spec)
    if kind == "GRAMMAR":
        return Grammar.from_lark(spec) if grammar_is_likely_lark(spec) else Grammar.from_gbnf(spec)
    if kind == "CHOICE":
        choices = json.loads(spec)
        return Grammar.from_choices([choices] if isinstance(choices, str) else choices)
    raise PdaError(f"pda does not serve {_KINDS.get(kind, kind)} constraints yet")


def validation_error(request_type: StructuredOutputOptions, error: Exception) -> VLLMValidationError:
    """vLLM's own request error for a constraint pda refuses, with pda's message."""
    from vllm.exceptions import VLLMValidationError

    return VLLMValidationError(f"pda cannot serve this {_KINDS.get(request_type.name, request_type.name)}: {error}",
                               parameter="structured_outputs")


_vocabularies: weakref.WeakKeyDictionary[Any, Vocabulary] = weakref.WeakKeyDictionary()
_vocabularies_lock = threading.Lock()


def vocabulary(tokenizer: Any) -> Vocabulary:
    """`Vocabulary.from_hf(tokenizer)`, built once per tokenizer object (vLLM shares one per model)."""
    with _vocabularies_lock:
        found = _vocabularies.get(tokenizer)
        if found is None:
            found = _vocabularies[tokenizer] = Vocabulary.from_hf(tokenizer)
        return found


class PdaGrammar(StructuredOutputGrammar):
    """One request's constraint: a pda `Matcher` on a compiled grammar shared by the requests that use it."""

    def __init__(self, compiled: CompiledGrammar, stop_token_ids: list[int] | None = None) -> None:
        self.compiled = compiled
        self.matcher = Matcher(compiled, stop_token_ids=stop_token_ids)

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advance by `tokens`, all or none; tokens after the one that terminates are ignored, as vLLM expects."""
        matcher = self.matcher
        if matcher.is_terminated() or matcher.accept_tokens(tokens):
            return True
        valid = matcher.validate_tokens(tokens)
        if valid and matcher.accept_tokens(valid):
            if matcher.is_terminated():
                return True
            matcher.rollback(len(valid))
        return False

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of a draft the grammar allows from here; nothing changes, nothing raises."""
        return self.matcher.validate_tokens(tokens)

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask: torch.Tensor, idx: int) -> None:
        self.matcher.fill_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def reset(self) -> None:
        self.matcher.reset()


@dataclass
class PdaBackend(StructuredOutputBackend):
    """Compiles vLLM's constraints with pda for one tokenizer and logits width (built as vLLM builds its own)."""

    def __post_init__(self) -> None:
        self.compact = bool(self.vllm_config.structured_outputs_config.disable_any_whitespace)
        self.vocab = vocabulary(self.tokenizer)
        self.mask_width = max(self.vocab_size, self.vocab.size)

    def compile_grammar(self, request_type: StructuredOutputOptions, grammar_spec: str,
                        stop_token_ids: set[int] | None = None) -> PdaGrammar:
        try:
            grammar = grammar_for(request_type, grammar_spec, compact=self.compact)
            compiled = compile(grammar, self.vocab, mask_width=self.mask_width)
        except PdaError as error:
            raise validation_error(request_type, error) from error
        return PdaGrammar(compiled, self.stop_ids(stop_token_ids))

    def stop_ids(self, stop_token_ids: set[int] | None) -> list[int] | None:
        """A request's stop ids for the matcher: the special or unused ones inside the mask.

        None (the vocabulary's EOS) when there are none, as XGrammar's backend does. A stop id
        that is a text token stays text: the grammar allows it where its bytes fit, and vLLM
        stops when it is sampled.
        """
        tokens, size = self.vocab.tokens, self.vocab.size
        ids = sorted(i for i in stop_token_ids or ()
                     if 0 <= i < self.mask_width and (i >= size or tokens[i] is None))
        return ids or None

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return allocate_token_bitmask(max_num_seqs, self.vocab_size, torch_tensor=True)

    def destroy(self) -> None:
        """Nothing to free: compiled grammars live in pda's byte-bounded caches."""


def _pda_validate_structured_outputs(original: Any) -> Any:
    """vLLM's request validation with pda's: the constraint is parsed by pda and the backend named `pda`."""
    from vllm.v1.structured_output.request import get_structured_output_key

    @functools.wraps(original)
    def validate(self: SamplingParams, model_config: Any, structured_outputs_config: Any, tokenizer: Any) -> None:
        params = self.structured_outputs
        if (structured_outputs_config is None or params is None or params.all_constraints_none()
                or tokenizer is None or model_config.is_diffusion):
            return original(self, model_config, structured_outputs_config, tokenizer)  # vLLM's own refusals
        request_type, spec = get_structured_output_key(params)
        try:
            grammar_for(request_type, spec, compact=bool(structured_outputs_config.disable_any_whitespace))
        except (PdaError, ValueError, TypeError) as error:
            raise validation_error(request_type, error) from error
        params._backend = BACKEND_NAME
        params._backend_was_auto = True  # a reused SamplingParams passes vLLM's backend check again
        params.__post_init__()

    validate._pda = True
    return validate


def _pda_grammar_init(original: Any) -> Any:
    """The manager's `grammar_init`, building a `PdaBackend` where vLLM would build its own."""

    @functools.wraps(original)
    def grammar_init(self: StructuredOutputManager, request: Any) -> None:
        if self.backend is None and request.structured_output_request is not None:
            self.backend = PdaBackend(self.vllm_config, tokenizer=self.tokenizer,
                                      vocab_size=self.vllm_config.model_config.get_vocab_size())
        original(self, request)

    grammar_init._pda = True
    return grammar_init


def enable() -> None:
    """Serve every structured-output request of the vLLM engines built after this call in this process with pda.

    Idempotent. An engine whose backend was already built keeps it.
    """
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output import StructuredOutputManager

    if not getattr(SamplingParams._validate_structured_outputs, "_pda", False):
        SamplingParams._validate_structured_outputs = _pda_validate_structured_outputs(
            SamplingParams._validate_structured_outputs)
    if not getattr(StructuredOutputManager.grammar_init, "_pda", False):
        StructuredOutputManager.grammar_init = _pda_grammar_init(StructuredOutputManager.grammar_init)
