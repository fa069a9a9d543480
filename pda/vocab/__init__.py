"""Vocabularies: every token id's exact bytes, read from HF tokenizers and tiktoken files."""

from pda.vocab.vocabulary import Vocabulary, VocabularyError

__all__ = ["Vocabulary", "VocabularyError"]
