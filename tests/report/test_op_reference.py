"""generated/ops.md is read from the code: every op row, every public function and module, and the options a
function refuses, in Markdown tables that stay whole."""

from __future__ import annotations

import re

import pytest

import symgrad.torch as storch
from symgrad import UnsupportedError
from symgrad.core.registry import OPS
from symgrad.report.op_reference import op_reference, refusals


@pytest.fixture(scope="module")
def text() -> str:
    return op_reference()


def test_every_op_row_is_listed_with_its_spellings(text):
    for name in OPS:
        assert f"| `{name}` | `" in text, name
    assert "| `exp` | `torch.exp({0})` |" in text and "| `matmul` | `{0} @ {1}` |" in text


def test_every_public_function_and_module_is_listed(text):
    for module, prefix in ((storch, ""), (storch.nn.functional, "F."), (storch.linalg, "linalg.")):
        for name in module.__all__:
            if callable(getattr(module, name)) and not isinstance(getattr(module, name), type):
                assert f"| `{prefix}{name}` |" in text, name
    for name in storch.nn.modules.__all__:
        if isinstance(getattr(storch.nn, name), type):
            assert f"| `nn.{name}` |" in text, name


def test_refused_options_are_quoted_from_the_code(text):
    row = next(line for line in text.splitlines() if line.startswith("| `linalg.matrix_norm` |"))
    assert "matrix_norm with ord=… needs singular values" in row
    with pytest.raises(UnsupportedError, match="needs singular values"):
        storch.linalg.matrix_norm(storch.ones(2, 2), ord="nuc")
    assert refusals(storch.linalg.matrix_norm) and refusals(storch.exp) == ()


def test_every_table_row_has_its_headers_cells(text):
    widths = None
    for line in text.splitlines():
        if not line.startswith("|"):
            widths = None
            continue
        cells = len(re.split(r"(?<!\\)\|", line)) - 2  # a cell's own | is escaped as \|
        widths = widths or cells
        assert cells == widths, line
