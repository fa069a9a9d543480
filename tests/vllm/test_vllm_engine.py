"""`vllm.LLM` generation through pda after `pda.integrations.vllm.enable()`, on a tiny random Qwen2 model.

The model comes from conftest.py's `model_dir` (built from a transformers config, nothing
downloaded, around the real Qwen2 tokenizer, saved to a temporary folder vLLM loads). Its
weights are random, so its text is nonsense; what is checked is that every finished
output belongs to its language by an independent check (`json` + `jsonschema`, `re`,
Lark itself) and every output cut at `max_tokens` is a viable prefix, with and without
n-gram speculative decoding, whose drafts go through `PdaGrammar.validate_tokens`.
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
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
PATTERN = r"[a-c]{2,4}-[0-9]{1,3}"
CHOICES = ["red", "green", "blue", "light blue"]
SQL = r"""
start: "SELECT " columns " FROM " table where?
columns: "*" | column (", " column)*
column: "id" | "name" | "age"
table: "people" | "pets"
where: " WHERE " column op value
op: " = " | " < " | " > "
value: /[0-9]{1,4}/ | "'" /[a-z]{1,8}/ "'"
"""
GBNF = """
root ::= "(" num ("," num)* ")"
num  ::= [0-9] | [1-9] [0-9] | [1-9] [0-9] [0-9]
"""
GBNF_LANGUAGE = r"\((0|[1-9][0-9]{0,2})(,(0|[1-9][0-9]{0,2}))*\)"


def json_ok(text: str) -> bool:
    jsonschema.validate(json.loads(text), SCHEMA)
    return True


TAG = json.dumps({"type": "structural_tag", "format": {"type": "tag", "begin": "<answer>", "end": "</answer>",
                                                       "content": {"type": "or", "elements": [
                                                           {"type": "const_string", "value": c} for c in CHOICES]}}})


def tag_ok(text: str) -> bool:
    found = re.fullmatch(r"<answer>(.*)</answer>", text, re.S)
    return bool(found) and found.group(1) in CHOICES


sql_parser = lark.Lark(SQL)
# kind: (structured_outputs, the language's own check, pda's grammar for viable prefixes of cut outputs)
KINDS = {
    "json": (StructuredOutputsParams(json=SCHEMA), json_ok, pda.Grammar.from_json_schema(SCHEMA, whitespace="flexible")),
    "regex": (StructuredOutputsParams(regex=PATTERN), lambda t: bool(re.fullmatch(PATTERN, t)), pda.Grammar.from_regex(PATTERN)),
    "choice": (StructuredOutputsParams(choice=CHOICES), lambda t: t in CHOICES, pda.Grammar.from_choices(CHOICES)),
    "lark-sql": (StructuredOutputsParams(grammar=SQL), lambda t: bool(sql_parser.parse(t)), pda.Grammar.from_lark(SQL)),
    "gbnf": (StructuredOutputsParams(grammar=GBNF), lambda t: bool(re.fullmatch(GBNF_LANGUAGE, t)), pda.Grammar.from_gbnf(GBNF)),
    "structural-tag": (StructuredOutputsParams(structural_tag=TAG), tag_ok, pda.Grammar.from_structural_tag(TAG)),
}
SAMPLES = 8
MAX_TOKENS = 48


def make_llm(model_dir: str, **kwargs) -> LLM:
    pda_vllm.enable()
    return LLM(model=model_dir, dtype="float32", max_model_len=512, max_num_seqs=SAMPLES, enforce_eager=True,
               seed=0, kv_cache_memory_bytes=256 << 20, **kwargs)


@pytest.fixture(scope="module")
def llm(model_dir):
    return make_llm(model_dir)


@pytest.fixture(scope="module")
def spec_llm(model_dir):
    return make_llm(model_dir, speculative_config={"method": "ngram", "num_speculative_tokens": 3,
                                                   "prompt_lookup_min": 1, "prompt_lookup_max": 3})


def structured_backend(llm: LLM) -> object:
    return llm.llm_engine.engine_core.engine_core.structured_output_manager.backend


def generate_and_check(llm: LLM, kind: str) -> tuple[int, int]:
    """SAMPLES outputs of one kind; each finished one in the language, each cut one a viable prefix. (finished, total)"""
    constraint, check, grammar = KINDS[kind]
    return sample_and_check(llm, kind, check, grammar, SAMPLES, max_tokens=MAX_TOKENS,
                            structured_outputs=constraint), SAMPLES


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_through_pda(llm, kind):
    finished, total = generate_and_check(llm, kind)
    assert isinstance(structured_backend(llm), pda_vllm.PdaBackend)
    assert total == SAMPLES and finished >= (1 if kind == "json" else SAMPLES // 2)


@pytest.mark.parametrize("kind", ["json", "regex", "gbnf"])
def test_ngram_speculative_drafts_are_validated_by_pda(spec_llm, kind, monkeypatch):
    drafts = []
    validate = pda_vllm.PdaGrammar.validate_tokens

    def recording(self, tokens):
        drafts.append(len(tokens))
        return validate(self, tokens)

    monkeypatch.setattr(pda_vllm.PdaGrammar, "validate_tokens", recording)
    finished, total = generate_and_check(spec_llm, kind)
    assert total == SAMPLES and finished >= 1
    assert sum(drafts) > 0  # n-gram drafts were proposed and went through pda


def test_refused_constraints_are_vllm_validation_errors(llm):
    for constraint, message in [
        (StructuredOutputsParams(grammar="start: undefined_rule"), "pda cannot serve this grammar"),
        (StructuredOutputsParams(json={"type": "string", "pattern": "(?<=a)b"}), "pda cannot serve this JSON Schema"),
        (StructuredOutputsParams(structural_tag=json.dumps({"type": "structural_tag", "format": {}})), "structural tag"),
    ]:
        with pytest.raises(VLLMValidationError, match=message):
            llm.generate(["x"], SamplingParams(max_tokens=4, structured_outputs=constraint), use_tqdm=False)
