"""pda: grammar-constrained decoding."""
