"""Builds the compiled hot path (rollback/_speedups.pyx, Cython) with the package; every other fact of
the package is in pyproject.toml. `pip install .` and `pip install -e .` both compile it: they need a C
compiler and the Python headers (scripts/lib/bootstrap.sh installs gcc and python3-dev when missing)."""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [Extension("rollback._speedups", ["rollback/_speedups.pyx"], extra_compile_args=["-O2"])],
        compiler_directives={"language_level": "3"},
    )
)
