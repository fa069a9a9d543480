"""`pda.generate`: pda's own decoding loop, with jump-forward and token healing.

`model.generate` samples one token per forward pass and cannot change the
prompt's tokens. This loop (one sequence, KV-cached, any causal LM with the
transformers forward interface) adds two things:

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

Outputs cut by `max_new_tokens` come back with `terminated=False`: only an
accepted EOS makes an output complete.
"""

from __future__ import annotations

import bisect
import codecs
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pda.compiler import CompiledGrammar, compile
from pda.errors import PdaError
from pda.grammar.grammar import Grammar
from pda.matcher import Matcher
from pda.vocab import Vocabulary

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
    model's forward passes and the sampling excluded: the constraint's overhead.
    """

    text: str
    token_ids: list[int]
    terminated: bool
    forward_passes: int
    forced_tokens: int
    prompt_ids: list[int] = field(default_factory=list)
    healed: bytes = b""
    constraint_seconds: float = field(default=0.0, compare=False)


class TokenPrefixIndex:
    """The vocabulary's token bytes sorted, for "tokens starting with b" and "tokens that prefix b".

    Built once per vocabulary (a sort of the byte strings); each query is a
    binary search, never a loop over the vocabulary.
    """

    def __init__(self, vocab: Vocabulary) -> None:
        pairs = sorted((t, i) for i, t in enumerate(vocab.tokens) if t)
        self._keys = [t for t, _ in pairs]
        self._ids = np.fromiter((i for _, i in pairs), dtype=np.int64, count=len(pairs))

    def starting_with(self, prefix: bytes) -> np.ndarray:
        """Ids of the tokens whose bytes start with `prefix` (`prefix` itself included)."""
        lo = bisect.bisect_left(self._keys, prefix)
        hi = lo
        upper = _successor(prefix)
        hi = len(self._keys) if upper is None else bisect.bisect_left(self._keys, upper, lo)
        return self._ids[lo:hi]

    def prefixes_of(self, data: bytes) -> np.ndarray:
        """Ids of the tokens whose bytes are a non-empty prefix of `data` (`data` itself included)."""
        out = []
        for k in range(1, len(data) + 1):
            piece = data[:k]
            at = bisect.bisect_left(self._keys, piece)
            while at < len(self._keys) and self._keys[at] == piece:
                out.append(int(self._ids[at]))
                at += 1
        return np.array(out, dtype=np.int64)


def _successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with `prefix` (None: no bound)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


_prefix_indexes: "weakref.WeakKeyDictionary[Vocabulary, TokenPrefixIndex]" = weakref.WeakKeyDictionary()
_vocabularies: "weakref.WeakKeyDictionary[Any, Vocabulary]" = weakref.WeakKeyDictionary()


def prefix_index(vocab: Vocabulary) -> TokenPrefixIndex:
    """The vocabulary's `TokenPrefixIndex`, built on first use."""
    index = _prefix_indexes.get(vocab)
    if index is None:
        index = _prefix_indexes[vocab] = TokenPrefixIndex(vocab)
    return index


def vocabulary_for(tokenizer: Any) -> Vocabulary:
    """`Vocabulary.from_hf(tokenizer)`, built once per tokenizer object."""
    try:
        vocab = _vocabularies.get(tokenizer)
    except TypeError:  # an unhashable tokenizer: no cache
        return Vocabulary.from_hf(tokenizer)
    if vocab is None:
        vocab = _vocabularies[tokenizer] = Vocabulary.from_hf(tokenizer)
    return vocab


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

    def fill_bitmask(self, bitmask: np.ndarray) -> None:
        """Row 0 of `bitmask`: the grammar's mask, or while healing, the tokens that spell the literal."""
        if not self.literal:
            self.matcher.fill_bitmask(bitmask, 0)
            return
        bitmask[0] = 0
        ids = self.healing_ids()
        np.bitwise_or.at(bitmask[0].view(np.uint32), ids >> 5, (np.uint32(1) << (ids & 31).astype(np.uint32)))

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


def generate(
    model: Any,
    tokenizer: Any,
    grammar: Grammar | CompiledGrammar | str,
    prompt: str,
    *,
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
) -> GenerationResult:
    """Generate a sentence of `grammar` after `prompt`, with jump-forward and token healing.

    `prefix` is text the output starts with (assistant prefill): the model sees
    `prompt + prefix`, the grammar matches `prefix` + what is generated.
    `heal` backs up over that many prompt tokens (True: one). Decoding follows
    transformers: greedy unless `do_sample` (default: the model's
    `generation_config.do_sample`, or True when a `temperature` above 0 is given),
    and when sampling, `temperature`, `top_k` and `top_p` default to the model's
    generation config. `on_text` receives the output's text as it grows (the prefix
    first). An empty context (an empty prompt, or one healing backs up over entirely)
    starts from the tokenizer's BOS token, else its EOS token (a document separator in
    pre-training); with neither, healing keeps the prompt's last token and an empty
    prompt is a `PdaError`. See the module docstring for what jump-forward and healing
    do exactly.
    """
    import torch

    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    compiled = compile_for(grammar, tokenizer, model)
    vocab = compiled.vocab
    matcher = Matcher(compiled)

    prefix_bytes = prefix.encode("utf-8")
    if prefix_bytes and not matcher.accept_bytes(prefix_bytes):
        compiled.grammar.check(prefix_bytes, prefix=True)  # raises ParseError with the offset
        raise PdaError(f"the prefix {prefix!r} is not a viable start of the grammar")
    temperature, top_k, top_p = _sampling(model, temperature, top_k, top_p, do_sample)
    encoded = list(tokenizer(prompt + prefix, add_special_tokens=True)["input_ids"])
    start = _start_token(tokenizer)
    ids, literal = _heal(vocab, encoded, len((prompt + prefix).encode("utf-8")), int(heal))
    index = prefix_index(vocab) if literal else None
    if index is not None and len(index.starting_with(literal)) > HEAL_MAX_CANDIDATES:
        ids, literal, index = encoded, b"", None
    if not ids and literal and start is None:  # nothing would be left to condition on: no healing
        ids, literal, index = encoded, b"", None
    if not ids:
        if start is None:
            raise PdaError("the prompt is empty and the tokenizer has no BOS or EOS token to start from")
        ids = [start]
    output = _Output(matcher, literal, index)

    forward = KVCachedForward(model)
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    width = logits_width(model)
    bitmask = np.empty((1, (width + 31) // 32), dtype=np.int32)
    eos = vocab.eos_ids

    generated: list[int] = []
    produced = bytearray()  # the generated tokens' bytes (healed literal first)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    emitted = [0]

    def emit() -> None:
        if on_text is None:
            return
        visible = produced[len(literal):]
        chunk = decoder.decode(bytes(visible[emitted[0]:]))
        emitted[0] = len(visible)
        if chunk:
            on_text(chunk)

    if on_text is not None and prefix:
        on_text(prefix)

    def take(tokens: list[int]) -> None:
        generated.extend(tokens)
        for t in tokens:
            produced.extend(vocab.tokens[t] or b"")
        emit()

    def jump(before: _Output, after: _Output, head: bytes, budget: int) -> tuple[_Output, list[int]] | None:
        """Canonical tokens for `head` + the bytes forced after it (last one held back), fed to a copy
        of `before` (the state before `head`); None when that changes nothing."""
        forced = after.forced()
        if not forced:
            return None
        text = _decodable(head + forced)
        if text is None or len(text.encode("utf-8")) <= len(head):
            return None
        canonical = vocab.encode(text)
        if canonical is None or len(canonical) < 2:
            return None
        tokens = canonical[:-1][:budget]
        if head and len(tokens) == 1 and vocab.tokens[tokens[0]] == head:
            return None  # the sampled token is already canonical and nothing else is forced whole
        state = before.copy()
        return (state, tokens) if all(state.accept(t) for t in tokens) else None

    pending: list[int] = ids
    forced_tokens = passes = 0
    spent = 0.0
    terminated = False
    with torch.inference_mode():
        jumped = jump(output, output, b"", max_new_tokens) if jump_forward and max_new_tokens > 0 else None
        if jumped is not None:
            output, tokens = jumped
            pending = pending + tokens
            forced_tokens += len(tokens)
            take(tokens)
        while len(generated) < max_new_tokens:
            scores = forward(pending)
            passes += 1
            started = time.perf_counter()
            output.fill_bitmask(bitmask)
            _apply(scores, bitmask)
            spent += time.perf_counter() - started
            x = sample_token(scores, temperature, top_k, top_p, generator)
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
            take(tokens)

    text = (prefix_bytes + bytes(produced[len(literal):])).decode("utf-8", errors="replace")
    tail = decoder.decode(b"", final=True)
    if on_text is not None and tail:
        on_text(tail)
    return GenerationResult(
        text=text,
        token_ids=generated,
        terminated=terminated,
        forward_passes=passes,
        forced_tokens=forced_tokens,
        prompt_ids=ids,
        healed=literal,
        constraint_seconds=spent,
    )


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


def _apply(scores: Any, bitmask: np.ndarray) -> None:
    from pda.integrations.transformers import apply_packed_bitmask_

    apply_packed_bitmask_(scores.unsqueeze(0), bitmask)
