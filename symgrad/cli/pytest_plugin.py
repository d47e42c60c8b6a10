"""``pytest --symgrad-verify``: each hand-written backward that ``symgrad verify PATH`` would check becomes a test.

pytest loads this plugin when symgrad is installed (the ``pytest11`` entry point); without the option it adds
nothing. With it, every Python file pytest visits that defines a ``torch.autograd.Function`` or custom op with a spec
(``[tool.symgrad.verify]`` in ``pyproject.toml``, or ``symgrad.testing.verify_spec``) gives one test per Function,
named ``FILE.py::Name``, which fails with symgrad's report when the backward is wrong or cannot be checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    parser.getgroup("symgrad").addoption(
        "--symgrad-verify",
        action="store_true",
        help="collect each torch.autograd.Function with a [tool.symgrad.verify] spec as a test of its backward",
    )


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    if file_path.suffix == ".py" and parent.config.getoption("--symgrad-verify", default=False):
        return BackwardsFile.from_parent(parent, path=file_path)
    return None


class BackwardsFile(pytest.File):
    """The Functions a file defines that have a spec, as tests."""

    def collect(self) -> Any:
        from ..core.errors import SymgradError
        from .verify_many import functions_in, project_of, spec_for

        project, table = project_of(self.path)
        for item in functions_in(self.path, project):
            try:
                spec = spec_for(item, table)
            except SymgradError as error:  # a bad spec fails its own test, not the file's collection
                spec = {"problem": str(error)}
            if spec is not None:
                yield BackwardTest.from_parent(self, name=item.name, found=item, spec=spec)


class BackwardError(Exception):
    """The verdict was not "proved": the report says why."""


class BackwardTest(pytest.Item):
    def __init__(self, *, found: Any, spec: dict, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.found, self.spec = found, spec

    def runtest(self) -> None:
        from ..core.errors import SymgradError
        from .verify import verified
        from .verify_many import spec_lists

        if "problem" in self.spec:
            raise BackwardError(f"{self.found.key}: could not check: {self.spec['problem']}")
        inputs, values, order, numbers = spec_lists(self.spec)
        try:
            verdict = verified(f"{self.found.path}:{self.found.name}", inputs, values, order, numbers)
        except SymgradError as error:
            raise BackwardError(f"{self.found.key}: could not check: {error}") from None
        if not verdict.held:
            raise BackwardError(verdict.report())

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, BackwardError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple:
        return self.path, None, f"{self.found.key} (symgrad verify)"
