"""The token index: per-lexer-state classification of the vocabulary."""
