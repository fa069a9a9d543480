"""Vocabularies: every token id's exact bytes, read from HF tokenizers and tiktoken files."""

from pda.vocab.qwen import load_qwen2_tokenizer
from pda.vocab.vocabulary import Vocabulary, VocabularyError

__all__ = ["Vocabulary", "VocabularyError", "load_qwen2_tokenizer"]
