"""Front ends and the grammar IR."""
