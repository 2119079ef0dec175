"""Builds the compiled hot path (rollback/_speedups.pyx, Cython) with the package, and puts the
Alembic migrations into it (app/_migrations: a wheel carries what the service needs to start);
every other fact of the package is in pyproject.toml. `pip install .` and `pip install -e .` both
compile the core: they need a C compiler and the Python headers (scripts/lib/bootstrap.sh installs
gcc and python3-dev when missing)."""

import os
import shutil
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# -O2 unless the builder's CFLAGS choose a level (the wheel test builds at -O0: it checks the package,
# not the core's speed).
OPTIMISE = [] if "-O" in os.environ.get("CFLAGS", "") else ["-O2"]


class BuildWithMigrations(build_py):
    """build_py, plus migrations/ copied into the built package as app/_migrations (a checkout,
    and an editable install, read migrations/ where it is: app/db.py looks there first)."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "app" / "_migrations"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(MIGRATIONS, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(
    cmdclass={"build_py": BuildWithMigrations},
    ext_modules=cythonize(
        [Extension("rollback._speedups", ["rollback/_speedups.pyx"], extra_compile_args=OPTIMISE)],
        compiler_directives={"language_level": "3"},
    ),
)
