"""`pda.generate`: pda's own decoding loop, with jump-forward and token healing.

`model.generate` samples one token per forward pass and cannot change the
prompt's tokens. This loop (KV-cached, any causal LM with the transformers
forward interface; one prompt, or a batch of them) adds two things:

**Jump-forward.** After each sampled token x the grammar may fix the next bytes
F (`Matcher.forced_bytes`: `": "` after a fixed key, say). Appending F token by
token as the mask allows would pick whichever split the model happens to like,
not the tokenizer's. Instead the loop re-tokenises bytes(x) + F canonically
(`Vocabulary.encode`, the tokenizer's own encoding of that text), so a BPE merge
across the seam between the sampled token and the forced text is made (`{` then
`"name` becomes `{"`, `name`). The canonical tokens, except the last one, are
appended and fed to the model in one forward pass; the last one is held back and
left to the mask, because the text that follows the forced bytes is unknown and
may merge with it (` "` + `abc` tokenises differently from ` "`, `abc`). The
seam to the left of x is not re-tokenised: that would mean rewinding the KV
cache, and x was already chosen as a whole token by the model. Jump-forward is
skipped when it would change nothing (the sampled token is the one canonical
token before the held-back one), when the text is not valid UTF-8, or when the
tokenizer's encoding does not reproduce the bytes (a normalizer changed them).
With two canonical tokens it saves no pass but still replaces the sampled token
by the canonical one (`n` then forced `ame"` becomes `name`, `"`); at the start
of the output, forced tokens ride along with the prompt's forward pass.

**Token healing.** A prompt's last token is often a fragment of what the model
would write (`{"na` ends in the token `na` where a model writes `name`).
Healing backs up over the last `heal` tokens of `prompt + prefix` (`prefix`: text
the output starts with, which the grammar matches); their bytes L must be
regenerated: a token is allowed when it is a prefix of L, or starts with L and
its remaining bytes are allowed by the grammar (which has already read all of
`prefix`). Candidates come from a sorted index of the vocabulary's bytes (built
once per vocabulary: a range lookup, no loop over the vocabulary); healing is
skipped when more than `HEAL_MAX_CANDIDATES` tokens start with L (a prompt
ending in a bare space), where checking each one would cost more than it is
worth. Jump-forward then treats L as forced text, so `{"na` + forced `me": `
becomes the canonical `name`, `":`.

**Stop strings.** An output ends as soon as its generated text (the prefix
excluded) contains a stop string; the text is cut before it and reported with
`stopped` set and `terminated=False`, since the grammar has not ended: the text is
a viable prefix of a sentence. A stop string may span tokens, or start the output.

**Batches.** A list of prompts runs as one batch: the prompts left-padded to the
longest, padding masked out by the attention mask and positions counted per row,
so greedy rows come out as each prompt alone without jump-forward. Each row has
its own matcher (one `fill_bitmasks` call a step), heals its own prompt, and
leaves the batch (and its KV cache) when it ends. Jump-forward is off in a batch:
it feeds a row a varying number of tokens per pass, which a batch can only take
with padding in the middle of rows and per-row cache bookkeeping; one token per
row and pass keeps every row aligned. A list of one prompt runs alone, with
jump-forward.

Outputs cut by `max_new_tokens` come back with `terminated=False`: only an
accepted EOS makes an output complete.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pda.compiler import CompiledGrammar, compile
from pda.errors import PdaError
from pda.grammar.grammar import Grammar
from pda.matcher import Matcher, fill_bitmasks
from pda.reasoning import ReasoningMatcher
from pda.vocab import Vocabulary
from pda.vocab.lookups import TokenPrefixIndex, prefix_index, vocabulary_for

HEAL_MAX_CANDIDATES = 4096


@dataclass
class GenerationResult:
    """What `pda.generate` produced.

    `text` is the constrained output (the caller's `prefix` included), a sentence
    of the grammar when `terminated`. `token_ids` are the ids generated after
    `prompt_ids` (healed prompt bytes regenerated, forced tokens, and the EOS
    when terminated). `forced_tokens` counts tokens appended by jump-forward
    without sampling, so without a forward pass of their own. `constraint_seconds`
    is the time spent on the grammar (masks, accepting tokens, jump-forward), the
    model's forward passes and the sampling excluded: the constraint's overhead
    (in a batch, each step's masks are shared evenly among its rows). `stopped` is
    the stop string that ended the output, if one did: `text` is cut before it and
    `token_ids` end with the token that completed it.
    """

    text: str
    token_ids: list[int]
    terminated: bool
    forward_passes: int
    forced_tokens: int
    prompt_ids: list[int] = field(default_factory=list)
    healed: bytes = b""
    constraint_seconds: float = field(default=0.0, compare=False)
    stopped: str | None = None


def logits_width(model: Any) -> int:
    """The size of the model's logits (may exceed the tokenizer's vocabulary)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.vocab_size)


def compile_for(grammar: Grammar | CompiledGrammar | str, tokenizer: Any, model: Any) -> CompiledGrammar:
    """Compile a grammar (object, path or shipped name) for a tokenizer and a model's logits width."""
    if isinstance(grammar, CompiledGrammar):
        return grammar
    if isinstance(grammar, str):
        grammar = Grammar.load(grammar)
    return compile(grammar, vocabulary_for(tokenizer), mask_width=logits_width(model))


class _Output:
    """The constraint on the generated bytes: a healing literal, then the grammar's matcher."""

    def __init__(self, matcher: Matcher, literal: bytes, index: TokenPrefixIndex | None) -> None:
        self.matcher = matcher
        self.literal = literal
        self.index = index

    def copy(self) -> "_Output":
        return _Output(self.matcher.copy(), self.literal, self.index)

    def accept(self, token_id: int) -> bool:
        """Feed one token; False (unchanged) when the literal or the grammar rejects it."""
        vocab = self.matcher.compiled.vocab
        if not self.literal:
            return self.matcher.accept_token(token_id)
        data = vocab.tokens[token_id] if 0 <= token_id < vocab.size else None
        if not data:
            return False
        k = len(self.literal)
        if len(data) <= k:
            if not self.literal.startswith(data):
                return False
            self.literal = self.literal[len(data):]
            return True
        if not data.startswith(self.literal) or not self.matcher.accept_bytes(data[k:]):
            return False
        self.literal = b""
        return True

    def forced(self) -> bytes:
        """Bytes fixed from here: the rest of the literal, then what the grammar forces after it."""
        return self.literal + self.matcher.forced_bytes()

    def fill_bitmask(self, bitmask: np.ndarray, row: int = 0) -> None:
        """Row `row` of `bitmask`: the grammar's mask, or while healing, the tokens that spell the literal."""
        if not self.literal:
            self.matcher.fill_bitmask(bitmask, row)
            return
        bitmask[row] = 0
        ids = self.healing_ids()
        np.bitwise_or.at(bitmask[row].view(np.uint32), ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))

    def healing_ids(self) -> np.ndarray:
        """Tokens that are a prefix of the literal, or start with it and continue as the grammar allows."""
        assert self.index is not None
        literal = self.literal
        shorter = self.index.prefixes_of(literal)
        vocab = self.matcher.compiled.vocab
        longer = [
            int(i)
            for i in self.index.starting_with(literal)
            if len(vocab.tokens[i]) > len(literal)  # type: ignore[arg-type]
            and self.matcher.copy().accept_bytes(vocab.tokens[i][len(literal):])  # type: ignore[index]
        ]
        return np.concatenate([shorter, np.array(longer, dtype=np.int64)])


def _decodable(data: bytes) -> str | None:
    """`data` (trimmed by at most 3 bytes of a cut UTF-8 character) as text, or None."""
    for cut in range(min(4, len(data))):
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def _heal(vocab: Vocabulary, ids: list[int], text_len: int, n: int) -> tuple[list[int], bytes]:
    """Back up over the last `n` tokens of `ids`: the kept ids and the bytes to regenerate.

    Nothing is backed up over a special token, or when the tokens' bytes do not
    spell the text exactly (a normalizer changed it).
    """
    pieces = [vocab.tokens[i] if 0 <= i < vocab.size else None for i in ids]
    if n <= 0 or len(ids) < n or any(p is None for p in pieces[-n:]):
        return ids, b""
    if sum(len(p) for p in pieces if p is not None) != text_len:
        return ids, b""
    return ids[:-n], b"".join(pieces[-n:])  # type: ignore[arg-type]


def sample_token(scores: Any, temperature: float, top_k: int | None, top_p: float | None, generator: Any) -> int:
    """One token from masked scores: greedy when temperature is 0, else temperature/top-k/top-p sampling."""
    import torch

    if temperature <= 0:
        return int(torch.argmax(scores))
    scores = scores / temperature
    if top_k is not None and 0 < top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_scores, order = torch.sort(scores, descending=True)
        cumulative = torch.softmax(sorted_scores, dim=-1).cumsum(dim=-1)
        drop = cumulative - torch.softmax(sorted_scores, dim=-1) >= top_p  # keep the token that crosses p
        scores = scores.masked_fill(torch.zeros_like(drop).scatter(0, order, drop), float("-inf"))
    # Inverse-CDF sampling: one uniform draw and a binary search (torch.multinomial over a 151k
    # vocabulary costs ~10 ms a call on a CPU). float64 keeps the CDF exact enough; a token of
    # probability 0 can never be picked because the CDF does not rise there.
    cdf = torch.softmax(scores.double(), dim=-1).cumsum(dim=-1)
    u = torch.rand((), generator=generator, dtype=torch.float64) * cdf[-1] * (1 - 1e-12)
    return int(torch.searchsorted(cdf, u, right=True))


def _sampling(model: Any, temperature: float | None, top_k: int | None, top_p: float | None,
              do_sample: bool | None) -> tuple[float, int | None, float | None]:
    """(temperature, top_k, top_p) as transformers would decode: temperature 0 (greedy) unless sampling."""
    config = getattr(model, "generation_config", None)
    if do_sample is None:
        do_sample = bool(getattr(config, "do_sample", False)) if temperature is None else temperature > 0
    if not do_sample:
        return 0.0, None, None
    if temperature is None:
        temperature = float(getattr(config, "temperature", None) or 1.0)
    if top_k is None:
        top_k = getattr(config, "top_k", None)
    if top_p is None:
        top_p = getattr(config, "top_p", None)
    return temperature, top_k, top_p


def _start_token(tokenizer: Any) -> int | None:
    """The token an empty context starts from: the tokenizer's BOS, else its EOS; None with neither."""
    for name in ("bos_token_id", "eos_token_id"):
        token = getattr(tokenizer, name, None)
        if isinstance(token, int):
            return token
    return None


def _prompt_texts(tokenizer: Any, prompt: str | Sequence[str] | None,
                  messages: Sequence[Any] | None) -> tuple[list[str], bool, bool]:
    """(the prompts' texts, whether a list was given, whether they come from the chat template)."""
    if (prompt is None) == (messages is None):
        raise ValueError("pass either a prompt (or a list of prompts) or chat messages")
    if prompt is not None:
        if isinstance(prompt, str):
            return [prompt], False, False
        texts = list(prompt)
        if not texts or not all(isinstance(p, str) for p in texts):
            raise ValueError("prompt must be a string or a non-empty list of strings")
        return texts, True, False
    if not getattr(tokenizer, "chat_template", None):
        raise PdaError("the tokenizer has no chat template (tokenizer.chat_template is unset), so messages "
                       "cannot be rendered: set one, or pass the prompt's text instead")
    conversations = list(messages)
    batched = bool(conversations) and not isinstance(conversations[0], Mapping)
    if not batched:
        conversations = [conversations]
    if not conversations or not all(conversations):
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts, or a list of such lists")
    texts = [tokenizer.apply_chat_template(list(c), tokenize=False, add_generation_prompt=True)
             for c in conversations]
    return texts, batched, True


def _stop_strings(stop: str | Sequence[str] | None) -> list[str]:
    """The stop strings as a list; an empty one is a ValueError (it would stop before anything)."""
    stops = [stop] if isinstance(stop, str) else list(stop or ())
    if not all(isinstance(s, str) and s for s in stops):
        raise ValueError(f"stop strings must be non-empty strings, got {stop!r}")
    return stops


def _start_row(tokenizer: Any, vocab: Vocabulary, matcher: Matcher, text: str, chat: bool,
               heal: int) -> tuple[_Output, list[int]]:
    """One prompt's constraint (the healed literal, then `matcher`) and the ids the model is fed.

    A chat template writes its own special tokens, so its text is encoded without adding any.
    """
    encoded = list(tokenizer(text, add_special_tokens=not chat)["input_ids"])
    start = _start_token(tokenizer)
    ids, literal = _heal(vocab, encoded, len(text.encode("utf-8")), heal)
    index = prefix_index(vocab) if literal else None
    if index is not None and len(index.starting_with(literal)) > HEAL_MAX_CANDIDATES:
        ids, literal, index = encoded, b"", None
    if not ids and literal and start is None:  # nothing would be left to condition on: no healing
        ids, literal, index = encoded, b"", None
    if not ids:
        if start is None:
            raise PdaError("the prompt is empty and the tokenizer has no BOS or EOS token to start from")
        ids = [start]
    return _Output(matcher, literal, index), ids


class _Text:
    """One output's bytes: the healed literal hidden, stop strings looked for, the text streamed.

    Stop strings are matched on the UTF-8 bytes after the prefix (a valid UTF-8 string only
    matches on character boundaries). Text that may be the start of a stop string is held
    back from `on_text` until it cannot be.
    """

    def __init__(self, vocab: Vocabulary, literal: bytes, prefix: str, stops: list[str],
                 on_text: Callable[[str], None] | None) -> None:
        self.tokens = vocab.tokens
        self.hidden = len(literal)
        self.prefix = prefix.encode("utf-8")
        self.produced = bytearray()  # the generated tokens' bytes, healed literal first
        self.stops = [(s.encode("utf-8"), s) for s in stops]
        self.hold = max((len(b) for b, _ in self.stops), default=1) - 1
        self.stopped: str | None = None
        self.end: int | None = None  # where a stop string cuts the visible bytes
        self.on_text = on_text
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.emitted = 0
        if on_text is not None and prefix:
            on_text(prefix)

    def take(self, tokens: list[int]) -> int:
        """Append `tokens`; how many are kept: all, or those up to the one that completes a stop string."""
        for k, token in enumerate(tokens):
            seen = len(self.produced) - self.hidden
            self.produced.extend(self.tokens[token] or b"")
            if self.stops and self._stop_from(max(0, seen - self.hold)):
                self.emit(final=True)
                return k + 1
        self.emit()
        return len(tokens)

    def _stop_from(self, start: int) -> bool:
        """Whether a stop string occurs in the visible bytes from `start`; the earliest one cuts the text
        (the first listed, of several at the same place)."""
        found = [(at, k) for k, (b, _) in enumerate(self.stops)
                 if (at := self.produced.find(b, self.hidden + start)) >= 0]
        if not found:
            return False
        at, k = min(found)
        self.stopped = self.stops[k][1]
        self.end = at - self.hidden
        return True

    def emit(self, final: bool = False) -> None:
        """Hand `on_text` the new text that no stop string can still claim (all of it when `final`)."""
        if self.on_text is None:
            return
        visible = len(self.produced) - self.hidden
        upto = self.end if self.end is not None else visible if final else visible - self.hold
        chunk = ""
        if upto > self.emitted:
            chunk = self.decoder.decode(bytes(self.produced[self.hidden + self.emitted:self.hidden + upto]))
            self.emitted = upto
        if final:
            chunk += self.decoder.decode(b"", final=True)
        if chunk:
            self.on_text(chunk)

    def text(self) -> str:
        """The prefix and the visible bytes, cut before the stop string if one ended the output."""
        return (self.prefix + bytes(self.produced[self.hidden:][:self.end])).decode("utf-8", errors="replace")


@dataclass
class _Settings:
    """How tokens are drawn, shared by every row of a call."""

    max_new_tokens: int
    temperature: float
    top_k: int | None
    top_p: float | None
    generator: Any

    def sample(self, scores: Any) -> int:
        return sample_token(scores, self.temperature, self.top_k, self.top_p, self.generator)


def generate(
    model: Any,
    tokenizer: Any,
    grammar: Grammar | CompiledGrammar | str,
    prompt: str | Sequence[str] | None = None,
    *,
    messages: Sequence[Mapping[str, Any]] | Sequence[Sequence[Mapping[str, Any]]] | None = None,
    stop: str | Sequence[str] | None = None,
    max_new_tokens: int = 256,
    temperature: float | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
    do_sample: bool | None = None,
    seed: int | None = None,
    jump_forward: bool = True,
    heal: bool | int = True,
    prefix: str = "",
    on_text: Callable[[str], None] | None = None,
    reasoning_budget: int | None = None,
    reasoning: tuple[str, str] = ("<think>", "</think>"),
) -> GenerationResult | list[GenerationResult]:
    """Generate a sentence of `grammar` after `prompt`, with jump-forward and token healing.

    `prompt` is a string (one `GenerationResult`) or a list of strings (a list of results,
    in order). `messages` replaces it with a chat: `[{"role": "user", "content": ...}]`
    (or a list of such chats), rendered by `tokenizer.apply_chat_template(...,
    add_generation_prompt=True)`; a `PdaError` when the tokenizer has no chat template.
    `prefix` is text the output starts with (assistant prefill): the model sees
    `prompt + prefix`, the grammar matches `prefix` + what is generated.
    `heal` backs up over that many prompt tokens (True: one). Decoding follows
    transformers: greedy unless `do_sample` (default: the model's
    `generation_config.do_sample`, or True when a `temperature` above 0 is given),
    and when sampling, `temperature`, `top_k` and `top_p` default to the model's
    generation config. `stop` strings end an output as soon as its generated text
    contains one: `text` is cut before it, `stopped` names it and `terminated` is False
    (the grammar has not ended; the text is a viable prefix of a sentence). `on_text`
    receives the output's text as it grows (the prefix first; single prompts only).
    An empty context (an empty prompt, or one healing backs up over entirely)
    starts from the tokenizer's BOS token, else its EOS token (a document separator in
    pre-training); with neither, healing keeps the prompt's last token and an empty
    prompt is a `PdaError`. See the module docstring for what jump-forward and healing
    do exactly, and for batches (several prompts run as one left-padded batch, without
    jump-forward). `reasoning_budget` caps the tokens between the `reasoning` delimiters
    (`pda.reasoning.ReasoningMatcher`: past it the closing delimiter is forced).
    """
    import torch

    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    texts, batched, chat = _prompt_texts(tokenizer, prompt, messages)
    stops = _stop_strings(stop)
    if len(texts) > 1 and on_text is not None:
        raise ValueError("on_text streams one output: generate a batch of prompts without it")
    compiled = compile_for(grammar, tokenizer, model)
    vocab = compiled.vocab
    if reasoning_budget is None:
        matcher = Matcher(compiled)
    else:
        matcher = ReasoningMatcher(compiled, max_tokens=reasoning_budget, open=reasoning[0], close=reasoning[1])

    prefix_bytes = prefix.encode("utf-8")
    if prefix_bytes and not matcher.accept_bytes(prefix_bytes):
        compiled.grammar.check(prefix_bytes, prefix=True)  # raises ParseError with the offset
        raise PdaError(f"the prefix {prefix!r} is not a viable start of the grammar")
    temperature, top_k, top_p = _sampling(model, temperature, top_k, top_p, do_sample)
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    settings = _Settings(max_new_tokens, temperature, top_k, top_p, generator)
    rows = [_start_row(tokenizer, vocab, matcher.copy(), text + prefix, chat, int(heal)) for text in texts]
    if len(rows) > 1:
        outputs = [_Text(vocab, output.literal, prefix, stops, None) for output, _ in rows]
        return _generate_batch(model, _pad_token(tokenizer), vocab, rows, outputs, settings)
    output, ids = rows[0]
    result = _generate_one(model, vocab, output, ids, _Text(vocab, output.literal, prefix, stops, on_text),
                           settings, jump_forward)
    return [result] if batched else result


def _generate_one(model: Any, vocab: Vocabulary, output: _Output, ids: list[int], text: _Text,
                  settings: _Settings, jump_forward: bool) -> GenerationResult:
    """One prompt: the KV-cached loop with jump-forward."""
    import torch

    max_new_tokens = settings.max_new_tokens
    forward = KVCachedForward(model)
    bitmask = np.empty((1, (logits_width(model) + 31) // 32), dtype=np.int32)
    eos = vocab.eos_ids
    literal = output.literal
    generated: list[int] = []
    pending: list[int] = ids
    forced_tokens = passes = 0
    spent = 0.0
    terminated = stopped = False

    def take(tokens: list[int]) -> bool:
        """Record `tokens` (cut after one that completes a stop string); whether a stop string ended the output."""
        nonlocal forced_tokens
        kept = text.take(tokens)
        generated.extend(tokens[:kept])
        forced_tokens -= len(tokens) - kept  # what a stop string cuts off is forced text
        return text.stopped is not None

    def jump(before: _Output, after: _Output, head: bytes, budget: int) -> tuple[_Output, list[int]] | None:
        """Canonical tokens for `head` + the bytes forced after it (last one held back), fed to a copy
        of `before` (the state before `head`); None when that changes nothing."""
        forced = after.forced()
        if not forced:
            return None
        decoded = _decodable(head + forced)
        if decoded is None or len(decoded.encode("utf-8")) <= len(head):
            return None
        canonical = vocab.encode(decoded)
        if canonical is None or len(canonical) < 2:
            return None
        tokens = canonical[:-1][:budget]
        if head and len(tokens) == 1 and vocab.tokens[tokens[0]] == head:
            return None  # the sampled token is already canonical and nothing else is forced whole
        state = before.copy()
        return (state, tokens) if all(state.accept(t) for t in tokens) else None

    with torch.inference_mode():
        jumped = jump(output, output, b"", max_new_tokens) if jump_forward and max_new_tokens > 0 else None
        if jumped is not None:
            output, tokens = jumped
            pending = pending + tokens
            forced_tokens += len(tokens)
            stopped = take(tokens)
        while not stopped and len(generated) < max_new_tokens:
            scores = forward(pending)
            passes += 1
            started = time.perf_counter()
            output.fill_bitmask(bitmask)
            _apply(scores, bitmask)
            spent += time.perf_counter() - started
            x = settings.sample(scores)
            started = time.perf_counter()
            if x in eos:
                terminated = output.accept(x)
                if not terminated:
                    raise PdaError(f"internal error: sampled EOS {x} where the grammar cannot end")
                generated.append(x)
                break
            after = output.copy()
            if not after.accept(x):
                raise PdaError(f"internal error: sampled token {vocab.describe(x)} outside the mask")
            budget = max_new_tokens - len(generated)
            jumped = jump(output, after, vocab.tokens[x] or b"", budget) if jump_forward and budget > 1 else None
            if jumped is not None:
                output, tokens = jumped
                forced_tokens += len(tokens) - 1
            else:
                output, tokens = after, [x]
            pending = tokens
            spent += time.perf_counter() - started
            stopped = take(tokens)

    text.emit(final=True)
    return GenerationResult(
        text=text.text(),
        token_ids=generated,
        terminated=terminated,
        forward_passes=passes,
        forced_tokens=forced_tokens,
        prompt_ids=ids,
        healed=literal,
        constraint_seconds=spent,
        stopped=text.stopped,
    )


def _generate_batch(model: Any, pad_id: int, vocab: Vocabulary, rows: list[tuple[_Output, list[int]]],
                    texts: list[_Text], settings: _Settings) -> list[GenerationResult]:
    """Several prompts as one left-padded batch, one token per row and pass; finished rows leave the batch."""
    import torch

    from pda.integrations.transformers import apply_packed_bitmask_

    outputs = [output for output, _ in rows]
    literals = [output.literal for output in outputs]
    n = len(rows)
    forward = BatchedForward(model, pad_id)
    bitmask = np.empty((n, (logits_width(model) + 31) // 32), dtype=np.int32)
    eos = vocab.eos_ids
    generated: list[list[int]] = [[] for _ in range(n)]
    passes, spent, terminated = [0] * n, [0.0] * n, [False] * n
    active = list(range(n)) if settings.max_new_tokens > 0 else []
    pending = [ids for _, ids in rows]
    with torch.inference_mode():
        while active:
            scores = forward(pending)
            started = time.perf_counter()
            plain = [k for k, r in enumerate(active) if not outputs[r].literal]
            fill_bitmasks([outputs[active[k]].matcher for k in plain], bitmask, plain)
            for k, r in enumerate(active):
                if outputs[r].literal:
                    outputs[r].fill_bitmask(bitmask, k)
            apply_packed_bitmask_(scores, bitmask[: len(active)])
            share = (time.perf_counter() - started) / len(active)  # the batch's masks, shared evenly
            keep, pending = [], []
            for k, r in enumerate(active):
                passes[r] += 1
                x = settings.sample(scores[k])
                started = time.perf_counter()
                if x in eos:
                    terminated[r] = outputs[r].accept(x)
                    if not terminated[r]:
                        raise PdaError(f"internal error: sampled EOS {x} where the grammar cannot end")
                    generated[r].append(x)
                elif not outputs[r].accept(x):
                    raise PdaError(f"internal error: sampled token {vocab.describe(x)} outside the mask")
                else:
                    generated[r].append(x)
                    texts[r].take([x])
                spent[r] += share + time.perf_counter() - started
                if not terminated[r] and texts[r].stopped is None and len(generated[r]) < settings.max_new_tokens:
                    keep.append(k)
                    pending.append([x])
            if keep and len(keep) < len(active):
                forward.keep(keep)
            active = [active[k] for k in keep]
    return [
        GenerationResult(text=texts[r].text(), token_ids=generated[r], terminated=terminated[r],
                         forward_passes=passes[r], forced_tokens=0, prompt_ids=rows[r][1], healed=literals[r],
                         constraint_seconds=spent[r], stopped=texts[r].stopped)
        for r in range(n)
    ]


def _pad_token(tokenizer: Any) -> int:
    """The id left padding is made of (never attended to): the tokenizer's pad token, else EOS, else 0."""
    for name in ("pad_token_id", "eos_token_id"):
        token = getattr(tokenizer, name, None)
        if isinstance(token, int):
            return token
    return 0


class KVCachedForward:
    """One KV-cached forward pass at a time; speaks both cache keyword spellings of transformers.

    Public with `sample_token` so that an unconstrained baseline (`pda demo`, the
    benchmarks) runs the very loop `generate` runs, minus the grammar.
    """

    def __init__(self, model: Any) -> None:
        import inspect

        params = inspect.signature(model.forward).parameters
        self.model = model
        self.device = next(model.parameters()).device
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        self.extra = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        self.cache: Any = None

    def __call__(self, tokens: list[int]) -> Any:
        """Feed `tokens` after everything fed so far; the next-token logits (float32, on the CPU)."""
        import torch

        kwargs = {self.cache_arg: self.cache, **self.extra}
        ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        out = self.model(input_ids=ids, use_cache=True, **kwargs)
        self.cache = getattr(out, self.cache_arg, None)
        return out.logits[0, -1].float().to("cpu")


class BatchedForward(KVCachedForward):
    """KV-cached forward passes over a batch: prompts left-padded, then one token per row a pass.

    Padding is masked out (`attention_mask`) and each row's positions count its own tokens
    only (`position_ids`), so a row sees what it would see alone. `keep` drops finished rows
    from the batch and its cache.
    """

    def __init__(self, model: Any, pad_id: int) -> None:
        import inspect

        super().__init__(model)
        params = inspect.signature(model.forward).parameters
        if "attention_mask" not in params or "position_ids" not in params:
            raise PdaError("a batch of prompts needs a model whose forward takes attention_mask and position_ids")
        self.pad_id = pad_id
        self.mask: Any = None
        self.next_position: Any = None

    def __call__(self, rows: list[list[int]]) -> Any:  # type: ignore[override]
        """Feed each row its tokens (any lengths at first, then one each); the logits, `[rows, width]`."""
        import torch

        if self.cache is None:
            width = max(len(r) for r in rows)
            ids = torch.tensor([[self.pad_id] * (width - len(r)) + r for r in rows], dtype=torch.long)
            self.mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=torch.long)
            positions = (self.mask.cumsum(-1) - 1).clamp(min=0)
        else:
            ids = torch.tensor(rows, dtype=torch.long)
            self.mask = torch.cat([self.mask, torch.ones_like(ids)], dim=1)
            positions = self.next_position[:, None] + torch.arange(ids.shape[1])
        self.next_position = positions[:, -1] + 1
        kwargs = {self.cache_arg: self.cache, **self.extra}
        out = self.model(input_ids=ids.to(self.device), attention_mask=self.mask.to(self.device),
                         position_ids=positions.to(self.device), use_cache=True, **kwargs)
        self.cache = getattr(out, self.cache_arg, None)
        return out.logits[:, -1].float().to("cpu")

    def keep(self, rows: list[int]) -> None:
        """Go on with these rows only (indices into the current batch, in order)."""
        import torch

        index = torch.tensor(rows, dtype=torch.long)
        self.cache.batch_select_indices(index.to(self.device))
        self.mask = self.mask[index]
        self.next_position = self.next_position[index]


def _apply(scores: Any, bitmask: np.ndarray) -> None:
    from pda.integrations.transformers import apply_packed_bitmask_

    apply_packed_bitmask_(scores.unsqueeze(0), bitmask)
