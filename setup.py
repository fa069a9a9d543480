"""The compiled pieces; everything else is in pyproject.toml.

* `pda.kernels._walk` (pda/kernels/_walk.c, the token index's trie walk),
  `pda.kernels._subsets` (pda/kernels/_subsets.c, the subset construction),
  `pda.kernels._partition` (pda/kernels/_partition.c, DFA minimisation),
  `pda.kernels._product` (pda/kernels/_product.c, the lexer's product DFA),
  `pda.kernels._earley` (pda/kernels/_earley.c, the Earley step),
  `pda.kernels._tables` (pda/kernels/_tables.c, the Earley parser's static tables),
  `pda.kernels._trie` (pda/kernels/_trie.c, the trie of byte strings),
  `pda.kernels._compose` (pda/kernels/_compose.c, a mask's boundary groups) and
  `pda.kernels._indent` (pda/kernels/_indent.c, an indenter state's probe),
  `pda.kernels._derive` (pda/kernels/_derive.c, lazy terminal DFAs by derivatives),
  `pda.kernels._repeat` (pda/kernels/_repeat.c, a counted repeat's copies) and
  `pda.kernels._scan` (pda/kernels/_scan.c, the scanner's byte loop) are required:
  without a C compiler and Python's headers the install fails, saying so.
* `pda._rows` (pda/_rows.c, see pda/rows.py; POSIX threads for `fill_bitmasks(threads=N)`)
  is `optional=True`: where it cannot be built pda uses the numpy row writers, which give
  the same results more slowly (from one thread).
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """`build_ext` that names what a required extension needs when it cannot be built."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            if ext.optional:
                raise
            raise SystemExit(
                f"error: building {ext.name} ({', '.join(ext.sources)}) failed: {error}\n"
                "pda needs a C compiler (gcc or clang) and the Python development headers "
                "(Debian/Ubuntu: apt-get install gcc python3-dev) to build its kernels."
            ) from error


# The headers kernels share (a change rebuilds the kernels that include them): the layout of the numpy buffers
# they read, the ExtendedMask object's layout, the sort of token ids, an int bit set as words.
BUFFER_FORMAT = "pda/kernels/buffer_format.h"
EXTENDED_MASK = "pda/kernels/extended_mask.h"
SORT_IDS = "pda/kernels/sort_ids.h"
INT_WORDS = "pda/kernels/int_words.h"

setup(
    ext_modules=[
        Extension("pda.kernels._walk", ["pda/kernels/_walk.c"], depends=[BUFFER_FORMAT, SORT_IDS]),
        Extension("pda.kernels._partition", ["pda/kernels/_partition.c"]),
        Extension("pda.kernels._product", ["pda/kernels/_product.c"], depends=[BUFFER_FORMAT]),
        Extension("pda.kernels._subsets", ["pda/kernels/_subsets.c"]),
        Extension("pda.kernels._earley", ["pda/kernels/_earley.c"], depends=[INT_WORDS]),
        Extension("pda.kernels._tables", ["pda/kernels/_tables.c"], depends=[BUFFER_FORMAT]),
        Extension("pda.kernels._trie", ["pda/kernels/_trie.c"]),
        Extension("pda.kernels._compose", ["pda/kernels/_compose.c"],
                  depends=[BUFFER_FORMAT, EXTENDED_MASK, SORT_IDS]),
        Extension("pda.kernels._indent", ["pda/kernels/_indent.c"]),
        Extension("pda.kernels._derive", ["pda/kernels/_derive.c"]),
        Extension("pda.kernels._repeat", ["pda/kernels/_repeat.c"], depends=[BUFFER_FORMAT]),
        Extension("pda.kernels._scan", ["pda/kernels/_scan.c"], depends=[BUFFER_FORMAT, INT_WORDS]),
        Extension("pda._rows", ["pda/_rows.c"], depends=[BUFFER_FORMAT, EXTENDED_MASK],
                  extra_compile_args=["-pthread"], extra_link_args=["-pthread"], optional=True),
    ],
    cmdclass={"build_ext": BuildExt},
)
