"""`pda.integrations.sglang` against SGLang's own grammar-backend base classes (no engine: no GPU here).

Random constrained walks through `fill_vocab_mask` and `accept_token`, as SGLang's
scheduler makes them, over the real Qwen2 vocabulary: every finished text is checked
by an independent parser (`json` + `jsonschema`, `re`), and the contract SGLang
relies on is checked call by call (rejection raises, `copy()` is fresh, jump-forward
and re-tokenisation keep the state exact).
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sglang_backend = pytest.importorskip("sglang.srt.constrained.base_grammar_backend")
jsonschema = pytest.importorskip("jsonschema")

from pda.demo.qwen import load_qwen2_tokenizer  # noqa: E402
from pda.integrations import sglang as pda_sglang  # noqa: E402
from pda.integrations.bitmask import unpack_bitmask  # noqa: E402

WIDTH = 151936  # Qwen2's logits
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def tokenizer():
    return load_qwen2_tokenizer()


@pytest.fixture(scope="module")
def backend(tokenizer):
    pda_sglang.register()
    init = sglang_backend.GRAMMAR_BACKEND_REGISTRY["pda"]

    class ServerArgs:
        constrained_json_disable_any_whitespace = False

    made = init(ServerArgs(), tokenizer, WIDTH, {tokenizer.eos_token_id})
    assert isinstance(made, sglang_backend.BaseGrammarBackend) and isinstance(made, pda_sglang.PdaGrammarBackend)
    return made


def walk(grammar, rng: random.Random, steps: int = 60) -> list[int]:
    """Sample allowed tokens (EOS once allowed, half the time) as SGLang's sampler would see them."""
    mask = grammar.allocate_vocab_mask(WIDTH, 1, "cpu")
    out = []
    eos = grammar.compiled.eos_ids.tolist()
    for _ in range(steps):
        grammar.reset_vocab_mask(mask)
        grammar.fill_vocab_mask(mask, 0)
        allowed = np.flatnonzero(unpack_bitmask(mask.numpy(), WIDTH)[0])
        assert len(allowed), "a live grammar allows something"
        can_end = [t for t in allowed if t in eos]
        token = int(can_end[0] if can_end and rng.random() < 0.5 else rng.choice(allowed))
        grammar.accept_token(token)
        out.append(token)
        if grammar.is_terminated():
            break
    return out


def text_of(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode([t for t in ids if t != tokenizer.eos_token_id])


@pytest.mark.parametrize("seed", range(6))
def test_json_schema_walks_validate(backend, tokenizer, seed):
    template = backend.dispatch_json(json.dumps(SCHEMA))
    grammar = template.copy()
    ids = walk(grammar, random.Random(seed), steps=200)
    if grammar.is_terminated():
        jsonschema.validate(json.loads(text_of(tokenizer, ids)), SCHEMA)
    assert not template.matcher.num_tokens  # the cached template stays pristine


def test_structural_tags_walks_decompose(backend, tokenizer):
    key = json.dumps({"structures": [{"begin": "<tool_call>", "schema": SCHEMA, "end": "</tool_call>"}],
                      "triggers": ["<tool_call>"], "at_least_one": True})
    template = backend.dispatch_structural_tag(key)
    assert isinstance(template, pda_sglang.PdaGrammar)
    for seed in range(4):
        grammar = template.copy()
        for token in tokenizer.encode(f"Text {seed} <tool_call>", add_special_tokens=False):
            grammar.accept_token(token)
        ids = walk(grammar, random.Random(seed), steps=120)
        if grammar.is_terminated():
            text = f"Text {seed} <tool_call>" + text_of(tokenizer, ids)
            body = re.fullmatch(r"Text \d <tool_call>(.*)</tool_call>(.*)", text, re.S)
            assert body and "<tool_call>" not in body.group(2), text
            jsonschema.validate(json.loads(body.group(1)), SCHEMA)
    refused = backend.dispatch_structural_tag(json.dumps({"type": "structural_tag", "format": {"type": "token"}}))
    assert isinstance(refused, sglang_backend.InvalidGrammarObject)


def test_regex_ebnf_and_any_json(backend, tokenizer):
    rng = random.Random(1)
    pattern = r"[a-c]{2,4}-[0-9]"
    for grammar, check in [
        (backend.dispatch_regex(pattern), lambda s: re.fullmatch(pattern, s)),
        (backend.dispatch_ebnf('root ::= "yes" | "no" | "maybe"'), lambda s: s in ("yes", "no", "maybe")),
        (backend.dispatch_json(pda_sglang.ANY_JSON), json.loads),
    ]:
        for _ in range(4):
            request = grammar.copy()
            ids = walk(request, rng, steps=80)
            if request.is_terminated():
                assert check(text_of(tokenizer, ids))


def test_refusals_raise_and_tokens_after_the_end_are_ignored(backend, tokenizer):
    grammar = backend.dispatch_ebnf('root ::= "yes"').copy()
    with pytest.raises(ValueError, match="not allowed"):
        grammar.accept_token(tokenizer.encode("no")[0])
    for token in tokenizer.encode("yes") + [tokenizer.eos_token_id]:
        grammar.accept_token(token)
    assert grammar.is_terminated() and grammar.finished
    grammar.accept_token(tokenizer.encode("x")[0])  # ignored
    grammar.rollback(1)
    assert not grammar.is_terminated() and not grammar.finished


def test_copies_are_fresh_and_independent(backend, tokenizer):
    template = backend.dispatch_regex("[a-z]+")
    a, b = template.copy(), template.copy()
    a.accept_token(tokenizer.encode("abc")[0])
    assert a.matcher.num_tokens == 1 and b.matcher.num_tokens == 0 and a.compiled is b.compiled


def test_invalid_constraints_become_sglang_errors(backend):
    bad = backend.dispatch_json(json.dumps({"type": "string", "pattern": "(?<=a)b"}))
    assert isinstance(bad, sglang_backend.InvalidGrammarObject) and "pda" in bad.error_message
    assert isinstance(backend.dispatch_ebnf("root ::= undefined-rule"), sglang_backend.InvalidGrammarObject)


def test_jump_forward_and_retokenize_keep_the_state_exact(tokenizer):
    # Compact JSON (SGLang's --constrained-json-disable-any-whitespace): after "{" a key's quote is forced.
    backend = pda_sglang.PdaGrammarBackend(tokenizer, WIDTH, {tokenizer.eos_token_id}, any_whitespace=False)
    grammar = backend.dispatch_json(json.dumps(SCHEMA)).copy()
    first = tokenizer.encode("{")
    for t in first:
        grammar.accept_token(t)
    helper = grammar.try_jump_forward(tokenizer)
    assert helper is not None
    forced, _ = grammar.jump_forward_str_state(helper)
    assert forced == '"'  # a key must follow: "name" or "age"
    new_ids = tokenizer.encode("{" + forced)
    grammar.jump_and_retokenize(first, new_ids, -1)
    fresh = backend.dispatch_json(json.dumps(SCHEMA)).copy()
    for t in new_ids:
        fresh.accept_token(t)
    assert grammar.matcher.num_tokens == len(new_ids)
    assert np.array_equal(grammar.matcher.allowed_token_ids(), fresh.matcher.allowed_token_ids())


def test_batched_fill_equals_row_fills_and_masks_apply(backend, tokenizer):
    templates = [backend.dispatch_regex("[0-9]+"), backend.dispatch_json(json.dumps(SCHEMA)),
                 backend.dispatch_ebnf('root ::= "a" "b"*')]
    grammars = [t.copy() for t in templates for _ in range(2)]
    grammars[1].accept_token(tokenizer.encode("7")[0])
    rows = [sglang_backend.GrammarRow(row, g) for row, g in zip([5, 0, 3, 1, 4, 2], grammars)]
    batched = grammars[0].allocate_vocab_mask(WIDTH, len(rows), "cpu")
    pda_sglang.PdaGrammar.fill_vocab_mask_batched(rows, batched)
    single = grammars[0].allocate_vocab_mask(WIDTH, len(rows), "cpu")
    for entry in rows:
        entry.grammar.fill_vocab_mask(single, entry.row)
    assert torch.equal(batched, single)
    logits = torch.zeros(len(rows), WIDTH)
    pda_sglang.PdaGrammar.apply_vocab_mask(logits, batched)
    allowed = torch.from_numpy(unpack_bitmask(batched.numpy(), WIDTH))
    assert torch.equal(torch.isfinite(logits), allowed)
