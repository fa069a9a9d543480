"""`PdaLogitsProcessor`, vLLM's custom logits-processor route, end to end on the tiny random Qwen2 model.

One engine serves both routes: `logits_processors=[PdaLogitsProcessor]` (requests name a pda
constraint in `extra_args`) and, after `enable()`, the structured-output backend (requests set
`structured_outputs`). Checked: finished outputs belong to their language by an independent
check, cut ones are viable prefixes; greedy outputs are the same token for token on both
routes (the same masks reach the sampler); a request without `pda_` keys is untouched in a
mixed batch; refused requests are vLLM validation errors.
"""

from __future__ import annotations

import json
import os
import re

import jsonschema
import lark
import pytest

pytest.importorskip("vllm", reason="vllm is not installed here: `make test-vllm` runs tests/vllm in .venv-vllm/")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process, where pda is enabled
from vllm import LLM, SamplingParams  # noqa: E402
from vllm.exceptions import VLLMValidationError  # noqa: E402
from vllm.sampling_params import StructuredOutputsParams  # noqa: E402

import pda  # noqa: E402
from tests.vllm.sampling import sample_and_check  # noqa: E402
from pda.integrations import vllm as pda_vllm  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "ok": {"type": "boolean"}},
    "required": ["name", "ok"],
    "additionalProperties": False,
}
PATTERN = r"[a-c]{2,4}-[0-9]{1,3}"
CHOICES = ["red", "green", "blue", "light blue"]
LIST = r"""
start: "[" item (", " item)* "]"
item: /[a-z]{1,6}/ | /[0-9]{1,3}/
"""
GBNF = 'root ::= "(" [0-9]+ ("," [0-9]+)* ")"'
list_parser = lark.Lark(LIST)


def json_ok(text: str) -> bool:
    jsonschema.validate(json.loads(text), SCHEMA)
    return True


# kind: (extra_args, the language's own check, pda's grammar for viable prefixes of cut outputs)
KINDS = {
    "json": ({"pda_json": SCHEMA, "pda_disable_any_whitespace": True}, json_ok,
             pda.Grammar.from_json_schema(SCHEMA, whitespace="compact")),
    "json-text": ({"pda_json": json.dumps(SCHEMA)}, json_ok, pda.Grammar.from_json_schema(SCHEMA, whitespace="flexible")),
    "regex": ({"pda_regex": PATTERN}, lambda t: bool(re.fullmatch(PATTERN, t)), pda.Grammar.from_regex(PATTERN)),
    "choice": ({"pda_choice": CHOICES}, lambda t: t in CHOICES, pda.Grammar.from_choices(CHOICES)),
    "lark": ({"pda_grammar": LIST}, lambda t: bool(list_parser.parse(t)), pda.Grammar.from_lark(LIST)),
    "gbnf": ({"pda_grammar": GBNF}, lambda t: bool(re.fullmatch(r"\(\d+(,\d+)*\)", t)), pda.Grammar.from_gbnf(GBNF)),
}
SAMPLES = 8
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def llm(model_dir):
    pda_vllm.enable()
    return LLM(model=model_dir, dtype="float32", max_model_len=512, max_num_seqs=SAMPLES, enforce_eager=True,
               seed=0, kv_cache_memory_bytes=256 << 20, logits_processors=[pda_vllm.PdaLogitsProcessor])


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_through_the_logits_processor(llm, kind):
    extra_args, check, grammar = KINDS[kind]
    finished = sample_and_check(llm, kind, check, grammar, SAMPLES, max_tokens=MAX_TOKENS, extra_args=extra_args)
    # The random model pads flexible JSON with white space until max_tokens: only its prefixes are checked.
    assert finished >= {"json": 1, "json-text": 0}.get(kind, SAMPLES // 2)


@pytest.mark.parametrize("kind", ["json-text", "regex", "lark"])  # the backend reads white space per engine
def test_greedy_tokens_equal_the_structured_output_backends(llm, kind):
    extra_args, _, _ = KINDS[kind]
    constraint = StructuredOutputsParams(**{k.removeprefix("pda_"): v for k, v in extra_args.items()})
    prompts = [f"Greedy {kind} #{i}:" for i in range(4)]
    by_processor = llm.generate(prompts, SamplingParams(max_tokens=MAX_TOKENS, temperature=0, extra_args=extra_args),
                                use_tqdm=False)
    by_backend = llm.generate(prompts, SamplingParams(max_tokens=MAX_TOKENS, temperature=0,
                                                      structured_outputs=constraint), use_tqdm=False)
    for a, b in zip(by_processor, by_backend):
        assert list(a.outputs[0].token_ids) == list(b.outputs[0].token_ids), (a.outputs[0].text, b.outputs[0].text)


def test_a_request_without_pda_arguments_is_untouched(llm):
    prompts = ["Constrained:", "Free text:"]
    plain = SamplingParams(max_tokens=12, temperature=0)
    constrained = SamplingParams(max_tokens=12, temperature=0, extra_args={"pda_regex": PATTERN})
    mixed = llm.generate(prompts, [constrained, plain], use_tqdm=False)
    free = llm.generate(prompts, [plain, plain], use_tqdm=False)
    assert re.fullmatch(PATTERN, mixed[0].outputs[0].text) or mixed[0].outputs[0].finish_reason == "length"
    assert KINDS["regex"][2].accepts_prefix(mixed[0].outputs[0].text)
    assert not KINDS["regex"][2].accepts_prefix(free[0].outputs[0].text)  # the constraint did something
    assert list(mixed[1].outputs[0].token_ids) == list(free[1].outputs[0].token_ids)


def test_refused_requests_are_vllm_validation_errors(llm):
    for extra_args, structured, message in [
        ({"pda_grammar": "start: undefined_rule"}, None, "pda cannot serve this grammar"),
        ({"pda_json": {"type": "string", "pattern": "(?<=a)b"}}, None, "pda cannot serve this JSON Schema"),
        ({"pda_jsn": {}}, None, "unknown pda extra_args"),
        ({"pda_regex": "a", "pda_choice": ["a"]}, None, "only use one kind"),
        ({"pda_regex": "a"}, StructuredOutputsParams(regex="a"), "cannot set structured_outputs too"),
    ]:
        params = SamplingParams(max_tokens=4, extra_args=extra_args, structured_outputs=structured)
        with pytest.raises(VLLMValidationError, match=message):
            llm.generate(["x"], params, use_tqdm=False)
