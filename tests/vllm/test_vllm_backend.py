"""`pda.integrations.vllm`'s backend and grammar objects, without an engine: vLLM's contract and XGrammar's masks.

The backends are built as vLLM's `StructuredOutputManager` builds them, over the real
Qwen2 vocabulary with the tiny model's padded logits width. The contract tests call
`PdaGrammar` the way vLLM's scheduler does (drafts with padding and special ids,
termination, rollback, stop ids); the conformance tests walk vLLM's own XGrammar
backend and pda side by side and compare the two masks at every step.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

pytest.importorskip("vllm", reason="vllm is not installed here: `make test-vllm` runs tests/vllm in .venv-vllm/")
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.v1.structured_output.backend_types import StructuredOutputGrammar  # noqa: E402
from vllm.v1.structured_output.backend_types import StructuredOutputOptions as Kind  # noqa: E402
from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend  # noqa: E402
from vllm.v1.structured_output.utils import choice_as_grammar  # noqa: E402

from pda.demo.qwen import QWEN2_SPECIAL_TOKENS  # noqa: E402
from pda.integrations.bitmask import unpack_bitmask  # noqa: E402
from pda.integrations.vllm import PdaBackend, PdaGrammar  # noqa: E402
from pda.vocab.lookups import vocabulary_for  # noqa: E402

ENDOFTEXT, IM_START, IM_END = QWEN2_SPECIAL_TOKENS.values()


@pytest.fixture(scope="module")
def backend(make_backend):
    return make_backend(PdaBackend)


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text)


def mask(grammar: StructuredOutputGrammar, backend, vocab_size: int) -> np.ndarray:
    bitmask = backend.allocate_token_bitmask(2)
    grammar.fill_bitmask(bitmask, 1)
    return unpack_bitmask(bitmask.numpy(), vocab_size)[1]


# --- vLLM's contract ---------------------------------------------------------------------------


def test_drafts_with_padding_special_and_refused_ids(backend, tokenizer, vocab_size):
    grammar = backend.compile_grammar(Kind.REGEX, "[a-c]{2,4}-[0-9]{1,3}", {IM_END, ENDOFTEXT})
    assert isinstance(grammar, PdaGrammar) and isinstance(grammar, StructuredOutputGrammar)
    good = ids(tokenizer, "ab-1")
    before = mask(grammar, backend, vocab_size)
    padding = [len(tokenizer), vocab_size - 1, vocab_size, vocab_size + 7, 10**9]  # past the tokenizer, past the logits
    for bad in padding + [IM_START, ids(tokenizer, "z")[0]]:
        assert grammar.validate_tokens(good + [bad] + good) == good
        assert grammar.validate_tokens([bad]) == []
        assert grammar.accept_tokens("r", good + [bad]) is False
        assert grammar.matcher.num_tokens == 0 and not grammar.is_terminated()
        assert np.array_equal(mask(grammar, backend, vocab_size), before)  # a refused draft changed nothing
    assert grammar.accept_tokens("r", good) and grammar.matcher.num_tokens == len(good)


def test_termination_ignores_later_tokens_and_rolls_back(backend, tokenizer, vocab_size):
    grammar = backend.compile_grammar(Kind.CHOICE, json.dumps(["yes", "no"]), {IM_END})
    yes, junk = ids(tokenizer, "yes"), ids(tokenizer, "zzz")
    assert grammar.validate_tokens(yes + [IM_END] + junk) == yes + [IM_END]  # nothing after the stop id
    assert grammar.matcher.num_tokens == 0
    assert grammar.accept_tokens("r", yes + [IM_END] + junk)  # tokens after termination are ignored
    assert grammar.is_terminated() and grammar.matcher.num_tokens == len(yes) + 1
    assert grammar.accept_tokens("r", junk) and grammar.validate_tokens(yes) == []
    grammar.rollback(1)  # the stop token
    assert not grammar.is_terminated()
    allowed = mask(grammar, backend, vocab_size)
    assert allowed[IM_END] and allowed.sum() == 1
    grammar.rollback(len(yes))
    assert grammar.matcher.num_tokens == 0 and not mask(grammar, backend, vocab_size)[IM_END]
    grammar.accept_tokens("r", yes)
    grammar.reset()
    assert grammar.matcher.num_tokens == 0 and not grammar.is_terminated()


def test_rollback_restores_the_mask_after_speculative_steps(backend, tokenizer, vocab_size):
    grammar = backend.compile_grammar(Kind.JSON, json.dumps({"type": "array", "items": {"type": "integer"}}), {IM_END})
    grammar.accept_tokens("r", ids(tokenizer, "[1,"))
    before = mask(grammar, backend, vocab_size)
    draft = ids(tokenizer, "22, 3]")
    for token in draft:  # as vLLM's grammar_bitmask advances through a draft, one token at a time
        assert grammar.accept_tokens("r", [token])
    assert grammar.validate_tokens([IM_END, 5]) == [IM_END]
    grammar.rollback(len(draft))
    assert np.array_equal(mask(grammar, backend, vocab_size), before)


def test_stop_ids_are_per_request_and_share_the_compiled_grammar(backend, tokenizer, vocab_size):
    spec = "[0-9]+"
    default = backend.compile_grammar(Kind.REGEX, spec)
    own = backend.compile_grammar(Kind.REGEX, spec, {ENDOFTEXT, IM_START, vocab_size - 1, ids(tokenizer, ".")[0]})
    assert own.compiled is default.compiled and backend.vocab is vocabulary_for(tokenizer)  # nothing rebuilt
    for grammar in (default, own):
        assert grammar.accept_tokens("r", ids(tokenizer, "42"))
    allowed_default, allowed_own = mask(default, backend, vocab_size), mask(own, backend, vocab_size)
    assert allowed_default[IM_END] and not allowed_default[ENDOFTEXT]
    assert not allowed_own[IM_END] and allowed_own[ENDOFTEXT] and allowed_own[IM_START] and allowed_own[vocab_size - 1]
    assert not allowed_own[ids(tokenizer, ".")[0]]  # a text stop id stays text: "." cannot follow digits here
    assert own.accept_tokens("r", [vocab_size - 1]) and own.is_terminated()


def test_every_request_kind_and_grammar_syntax(backend, tokenizer):
    lark = backend.compile_grammar(Kind.GRAMMAR, 'start: "a" "b"+')
    gbnf = backend.compile_grammar(Kind.GRAMMAR, 'root ::= "a" "b"+')
    for grammar in (lark, gbnf):
        assert grammar.validate_tokens(ids(tokenizer, "abbb") + [IM_END]) == ids(tokenizer, "abbb") + [IM_END]
        assert grammar.validate_tokens(ids(tokenizer, "ba")) == []
    obj = backend.compile_grammar(Kind.JSON_OBJECT, "")
    assert obj.accept_tokens("r", ids(tokenizer, '{"k": [1]}') + [IM_END]) and obj.is_terminated()
    assert backend.compile_grammar(Kind.JSON_OBJECT, "").validate_tokens(ids(tokenizer, "[1]")) == []
    schema = backend.compile_grammar(Kind.JSON, json.dumps({"type": "boolean"}))
    assert schema.validate_tokens(ids(tokenizer, "true") + [IM_END]) == ids(tokenizer, "true") + [IM_END]


def test_refused_constraints_are_vllm_validation_errors(backend):
    with pytest.raises(VLLMValidationError, match="pda cannot serve this grammar: .*undefined"):
        backend.compile_grammar(Kind.GRAMMAR, "start: undefined_rule")
    with pytest.raises(VLLMValidationError, match="pda cannot serve this JSON Schema"):
        backend.compile_grammar(Kind.JSON, json.dumps({"type": "string", "pattern": "(?<=a)b"}))
    with pytest.raises(VLLMValidationError, match="structural tag: .*format type"):
        backend.compile_grammar(Kind.STRUCTURAL_TAG, json.dumps({"type": "structural_tag", "format": {}}))


def test_structural_tags(backend, tokenizer):
    spec = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": [
        {"begin": "<tool_call>", "end": "</tool_call>",
         "content": {"type": "json_schema", "json_schema": {"type": "boolean"}}}]}}
    grammar = backend.compile_grammar(Kind.STRUCTURAL_TAG, json.dumps(spec))
    text = ids(tokenizer, "Sure. <tool_call>true</tool_call> Done.")
    assert grammar.validate_tokens(text + [IM_END]) == text + [IM_END]
    bad = ids(tokenizer, "Sure. <tool_call>nope</tool_call>")
    assert len(grammar.validate_tokens(bad)) < len(bad)


def test_the_bitmask_is_vllms_layout(backend, vocab_size):
    bitmask = backend.allocate_token_bitmask(3)
    assert bitmask.dtype.is_signed and tuple(bitmask.shape) == (3, (vocab_size + 31) // 32)
    assert bool((bitmask == -1).all())


# --- the same masks as vLLM's XGrammar backend ---------------------------------------------------

STRICT_SCHEMAS = [
    {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
    {"enum": ["a", "b", "c d"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False},
    {"type": ["boolean", "null"]},
]
# Same language, so the same mask after every prefix.
SAME = [(Kind.REGEX, pattern, False) for pattern in
        ["[a-c]{2,4}-[0-9]{1,3}", "(yes|no|maybe)", "[A-Z][a-z]+( [A-Z][a-z]+)?", "[0-9]{3}-[0-9]{4}"]]
SAME += [(Kind.CHOICE, json.dumps(["red", "green", "blue", "light blue"]), False)]
SAME += [(Kind.JSON, json.dumps(schema), True) for schema in STRICT_SCHEMAS]
# pda's "integer" is an integer literal by default, as XGrammar's (5.0, 5e2 and -0 only under exact=True).
SAME += [(Kind.JSON, json.dumps({"type": "integer"}), True)]
# pda's language is larger, so pda's mask holds XGrammar's at every step of a walk both allow:
SUPERSET = [
    # Properties in any order (pda's default for up to 6 properties); XGrammar keeps the schema's order.
    (Kind.JSON, json.dumps({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"enum": ["x", "y"]}},
                            "required": ["a", "b"], "additionalProperties": False}), True),
]
# Not compared: `\d` (Unicode digits in pda, as in Python's re; [0-9] in XGrammar), flexible whitespace
# (pda: runs of 1-64 white-space characters, also around the value; XGrammar: unbounded runs between
# tokens only), and strings with maxLength (XGrammar lets raw control characters in, invalid JSON, and
# refuses escapes), and special tokens inside a string (XGrammar takes <|im_start|> as text).


def xgrammar_constraint(kind: Kind, spec: str) -> tuple[Kind, str]:
    """What vLLM's front end hands XGrammar: choices become a GBNF grammar (`validate_xgrammar_grammar`)."""
    return (Kind.GRAMMAR, choice_as_grammar(json.loads(spec))) if kind is Kind.CHOICE else (kind, spec)


def walk_both(make_backend, vocab_size, kind, spec, compact, seed):
    """Random walks among the tokens both allow (the stop token a third of the time); both masks at each step."""
    rng = random.Random(seed)
    xgr_backend, pda_backend = make_backend(XgrammarBackend, compact=compact), make_backend(PdaBackend, compact=compact)
    for _ in range(4):
        xgr = xgr_backend.compile_grammar(*xgrammar_constraint(kind, spec), {IM_END})
        ours = pda_backend.compile_grammar(kind, spec, {IM_END})
        for _ in range(30):
            if xgr.is_terminated():
                assert ours.is_terminated()
                break
            theirs, mine = mask(xgr, xgr_backend, vocab_size), mask(ours, pda_backend, vocab_size)
            yield theirs, mine
            both = np.flatnonzero(theirs & mine)
            token = IM_END if both[-1] == IM_END and rng.random() < 1 / 3 else int(rng.choice(both))
            assert xgr.accept_tokens("r", [token]) and ours.accept_tokens("r", [token])


@pytest.mark.parametrize("kind,spec,compact", SAME, ids=[f"{k.name}:{s}" for k, s, _ in SAME])
def test_same_masks_as_xgrammar(make_backend, vocab_size, kind, spec, compact):
    steps = 0
    for theirs, mine in walk_both(make_backend, vocab_size, kind, spec, compact, seed=0):
        assert np.array_equal(theirs, mine), (np.flatnonzero(theirs & ~mine)[:8], np.flatnonzero(mine & ~theirs)[:8])
        steps += 1
    assert steps >= 8


@pytest.mark.parametrize("kind,spec,compact", SUPERSET, ids=[f"{k.name}:{s}" for k, s, _ in SUPERSET])
def test_pda_mask_holds_xgrammars_where_its_language_is_larger(make_backend, vocab_size, kind, spec, compact):
    larger = 0
    for theirs, mine in walk_both(make_backend, vocab_size, kind, spec, compact, seed=1):
        assert not (theirs & ~mine).any(), np.flatnonzero(theirs & ~mine)[:8]
        larger += bool((mine & ~theirs).any())
    assert larger  # the difference the comment names shows up
