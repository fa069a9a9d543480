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
  line holds `::=`: vLLM's own test, `grammar_is_likely_lark`), CHOICE and STRUCTURAL_TAG
  (XGrammar's structural-tag JSON, `Grammar.from_structural_tag`). Vocabularies are built once per tokenizer; the mask
  width is vLLM's vocabulary size (the model's logits, padding included).
- `PdaGrammar` follows `StructuredOutputGrammar`'s contract over one `pda.Matcher`:
  `accept_tokens` is all or nothing (False, state unchanged, when any token is refused:
  vLLM then ends the request) and ignores tokens after the one that terminates;
  `validate_tokens` returns a draft's longest allowed prefix and never raises on ids no
  text holds (padding past the tokenizer, special ids); the request's stop ids
  (`SamplingParams.all_stop_token_ids`) are the matcher's own `stop_token_ids`.

`PdaLogitsProcessor` is the other route, vLLM's custom logits processors, for engines
without speculative decoding (vLLM refuses custom logits processors beside it): no
patching, pda is picked per request by `SamplingParams.extra_args` (`vllm_xargs` over
HTTP). See docs/serving.md for both routes.

This module imports vLLM: import it only where vLLM is installed.
"""

from __future__ import annotations

import functools
import json
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from vllm.exceptions import VLLMValidationError
from vllm.logger import init_logger
from vllm.sampling_params import SamplingParams, StructuredOutputsParams
from vllm.tokenizers import cached_tokenizer_from_config
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates
from vllm.v1.structured_output import StructuredOutputManager
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)
from vllm.v1.structured_output.request import get_structured_output_key
from vllm.v1.structured_output.utils import grammar_is_likely_lark

from pda.compiler import CompiledGrammar, compile
from pda.errors import PdaError
from pda.grammar.grammar import Grammar
from pda.integrations.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace, bitmask_width
from pda.matcher import Matcher, fill_bitmasks
from pda.vocab import Vocabulary
from pda.vocab.lookups import vocabulary_for

if TYPE_CHECKING:
    from vllm.config import VllmConfig

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
    if kind == "STRUCTURAL_TAG":
        return Grammar.from_structural_tag(spec)
    raise PdaError(f"pda does not serve {_KINDS.get(kind, kind)} constraints yet")


def validation_error(request_type: StructuredOutputOptions, error: Exception) -> VLLMValidationError:
    """vLLM's own request error for a constraint pda refuses, with pda's message."""
    return VLLMValidationError(f"pda cannot serve this {_KINDS.get(request_type.name, request_type.name)}: {error}",
                               parameter="structured_outputs")


def matcher_stop_ids(vocab: Vocabulary, mask_width: int, stop_token_ids: Any) -> list[int] | None:
    """A request's stop ids for its matcher: the special or unused ones inside the mask.

    None (the vocabulary's EOS) when there are none, as XGrammar's backend does. A stop id
    that is a text token stays text: the grammar allows it where its bytes fit, and vLLM
    stops when it is sampled.
    """
    tokens, size = vocab.tokens, vocab.size
    ids = sorted(i for i in stop_token_ids or () if 0 <= i < mask_width and (i >= size or tokens[i] is None))
    return ids or None


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
        self.vocab = vocabulary_for(self.tokenizer)
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
        return matcher_stop_ids(self.vocab, self.mask_width, stop_token_ids)

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return allocate_token_bitmask(max_num_seqs, self.vocab_size, torch_tensor=True)

    def destroy(self) -> None:
        """Nothing to free: compiled grammars live in pda's byte-bounded caches."""


def _pda_validate_structured_outputs(original: Any) -> Any:
    """vLLM's request validation with pda's: the constraint is parsed by pda and the backend named `pda`."""

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

    if not getattr(SamplingParams._validate_structured_outputs, "_pda", False):
        SamplingParams._validate_structured_outputs = _pda_validate_structured_outputs(
            SamplingParams._validate_structured_outputs)
    if not getattr(StructuredOutputManager.grammar_init, "_pda", False):
        StructuredOutputManager.grammar_init = _pda_grammar_init(StructuredOutputManager.grammar_init)


# --- the logits-processor route ------------------------------------------------------------

EXTRA_ARG_PREFIX = "pda_"
# extra_args key: StructuredOutputsParams field (flat keys: `vllm_xargs` over HTTP takes no nested objects)
_EXTRA_ARGS = {f"{EXTRA_ARG_PREFIX}{name}": name
               for name in ("json", "json_object", "regex", "grammar", "choice", "disable_any_whitespace")}

logger = init_logger(__name__)


def request_constraint(params: SamplingParams) -> tuple[StructuredOutputOptions, str, bool] | None:
    """A request's pda constraint from its `extra_args` (kind, spec, compact), or None when it asks for none.

    The keys are `StructuredOutputsParams`' fields prefixed `pda_`: one of `pda_json` (a JSON Schema,
    object or text), `pda_json_object`, `pda_regex`, `pda_grammar` (Lark or GBNF) and `pda_choice`,
    and optionally `pda_disable_any_whitespace`. `VLLMValidationError` for a misspelt `pda_` key,
    several constraints, or a request that also sets `structured_outputs`.
    """
    extra = params.extra_args or {}
    given = {key: value for key, value in extra.items() if key.startswith(EXTRA_ARG_PREFIX)}
    if not given:
        return None
    unknown = sorted(set(given) - set(_EXTRA_ARGS))
    if unknown:
        raise VLLMValidationError(f"unknown pda extra_args {unknown}: expected some of {sorted(_EXTRA_ARGS)}",
                                  parameter="extra_args")
    if params.structured_outputs is not None:
        raise VLLMValidationError("a request constrained by pda's extra_args cannot set structured_outputs too",
                                  parameter="extra_args")
    fields = {_EXTRA_ARGS[key]: value for key, value in given.items()}
    compact = bool(fields.pop("disable_any_whitespace", False))
    kind, spec = get_structured_output_key(StructuredOutputsParams(**fields))
    return kind, spec, compact


class _Request:
    """One request's matcher, kept in step with vLLM's own list of its output ids.

    The grammar compiles on a worker thread while the engine runs the forward pass; the
    first `apply` waits for it. A token the grammar refuses (vLLM sampled from a row with
    nothing allowed, e.g. `min_tokens` forbidding the only stop) and a grammar that fails
    to compile leave the row with its stop tokens only, so the request ends.
    """

    def __init__(self, compiled: Future[CompiledGrammar], output_ids: list[int], stop_ids: list[int] | None,
                 stop_row: np.ndarray) -> None:
        self.compiled = compiled
        self.output_ids = output_ids
        self.stop_ids = stop_ids
        self.stop_row = stop_row
        self.matcher: Matcher | None = None
        self.seen = 0
        self.failed = False

    def sync(self) -> Matcher | None:
        """Accept the output ids not seen yet; the matcher to fill a mask from, None when the row only stops."""
        if self.failed:
            return None
        if self.matcher is None:
            try:
                self.matcher = Matcher(self.compiled.result(), stop_token_ids=self.stop_ids)
            except PdaError as error:
                logger.error("pda could not compile a request's grammar; the request is ended: %s", error)
                self.failed = True
                return None
        ids = self.output_ids
        end = len(ids)
        while end > self.seen and ids[end - 1] < 0:  # async scheduling's placeholders, replaced before sampling
            end -= 1
        if end < self.seen:  # vLLM dropped tokens (a KV-load failure): back up
            self.matcher.rollback(min(self.seen - end, self.matcher.num_tokens()))
            self.seen = end
        for token in ids[self.seen:end]:
            if self.matcher.is_terminated():
                break
            if not self.matcher.accept_token(token):
                logger.warning("pda: a request's output left its grammar at token %d; the request is ended", token)
                self.failed = True
                return None
        self.seen = end
        return self.matcher


class PdaLogitsProcessor(LogitsProcessor):
    """vLLM v1 custom logits processor: masks each request that names a pda constraint in its `extra_args`.

    `LLM(model=..., logits_processors=[PdaLogitsProcessor])`, or
    `vllm serve ... --logits-processors pda.integrations.vllm:PdaLogitsProcessor`; then
    `SamplingParams(extra_args={"pda_json": schema})` (see `request_constraint`). Requests
    without `pda_` keys are untouched. vLLM validates each request in the front end with
    `validate_params` (a constraint pda refuses is a `VLLMValidationError`), builds one
    processor per engine, reports batch changes through `update_state` (which starts the
    compilation) and calls `apply` on the logits before sampling, where each row's matcher
    reads the request's output ids (vLLM's live list) and writes its mask. A row whose
    grammar ended (its stop token accepted) is left as it is.
    """

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        constraint = request_constraint(sampling_params)
        if constraint is not None:
            kind, spec, compact = constraint
            try:
                grammar_for(kind, spec, compact=compact)
            except (PdaError, ValueError, TypeError) as error:
                raise validation_error(kind, error) from error

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        model_config = vllm_config.model_config
        self.vocab = vocabulary_for(cached_tokenizer_from_config(model_config))
        self.width = model_config.get_vocab_size()
        self.mask_width = max(self.width, self.vocab.size)
        self.bitmask = np.empty((vllm_config.scheduler_config.max_num_seqs, bitmask_width(self.width)),
                                dtype=np.int32)
        self.requests: dict[int, _Request] = {}
        self.compiler = ThreadPoolExecutor(1, thread_name_prefix="pda-compile")

    def is_argmax_invariant(self) -> bool:
        return False  # a mask changes the greedy token

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self.requests, batch_update, self._new_request)

    def _new_request(self, params: SamplingParams, _prompt_ids: list[int] | None,
                     output_ids: list[int]) -> _Request | None:
        constraint = request_constraint(params)
        if constraint is None:
            return None
        kind, spec, compact = constraint
        compiled = self.compiler.submit(
            lambda: compile(grammar_for(kind, spec, compact=compact), self.vocab, mask_width=self.mask_width))
        stops = matcher_stop_ids(self.vocab, self.mask_width, params.all_stop_token_ids)
        stop_row = np.zeros(self.bitmask.shape[1] * 32, dtype=bool)
        stop_row[[i for i in stops or sorted(self.vocab.eos_ids) if i < self.width]] = True
        return _Request(compiled, output_ids, stops, np.packbits(stop_row, bitorder="little").view(np.int32))

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.requests:
            return logits
        bitmask = self.bitmask[: logits.shape[0]]
        bitmask.fill(-1)
        rows, matchers = [], []
        for index, request in self.requests.items():
            matcher = request.sync()
            if matcher is None:
                bitmask[index] = request.stop_row
            elif not matcher.is_terminated():
                rows.append(index)
                matchers.append(matcher)
        fill_bitmasks(matchers, bitmask, rows)
        apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask))
        return logits
