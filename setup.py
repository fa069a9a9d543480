"""The one compiled piece, `pda._rows` (see pda/rows.py); everything else is in pyproject.toml.

`optional=True`: without a C compiler the install still succeeds and pda uses the
numpy row writers, which give the same results more slowly.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("pda._rows", ["pda/_rows.c"], optional=True)])
