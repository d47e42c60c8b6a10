"""setuptools' ``build_py``, plus the top-level ``templates/`` copied into the wheel as ``symgrad/templates``.

pyproject.toml names this class as its ``build_py`` (``[tool.setuptools] cmdclass``). templates/ is not mapped as a
package (``symgrad.templates``): a mapped package would make ``pip install -e .`` install an import hook, which
Python asks only after the working directory, instead of a plain path entry (see the comment in pyproject.toml).
An editable install needs no copy: ``symgrad.emit.templates.template_dir`` reads the checkout's templates/.

This file runs at build time only; it is not part of the package.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

TEMPLATES = "templates"


class BuildPy(build_py):
    """Build the packages, then copy templates/ (the whole tree: Jinja files and what pages inline) beside them."""

    def run(self) -> None:
        super().run()
        source = Path(TEMPLATES)
        if not source.is_dir():
            raise FileNotFoundError("templates/ is missing from the source tree (MANIFEST.in puts it in the sdist)")
        target = Path(self.build_lib, "symgrad", TEMPLATES)
        shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
