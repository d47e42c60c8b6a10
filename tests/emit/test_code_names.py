"""The user's names never collide with the emitted module's own: where one would, the code gives it a variant
and says so in the module's docstring; nothing is refused."""

from __future__ import annotations

import ast
import re

import pytest
import torch

import symgrad as sg
import symgrad.torch as st
from symgrad.emit.code_names import VOCABULARY


def _identifiers_beside(source: str, user: set[str]) -> set[str]:
    """Every identifier bound or read in a function of ``source`` that binds one of the ``user`` names too."""
    found: set[str] = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef):
            continue
        names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
        names |= {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
        # a comprehension's own variables live in its scope, which the user's names do not reach
        names -= {n.id for c in ast.walk(function) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)
                  if isinstance(n, ast.Name)}  # fmt: skip
        if names & user:
            found |= names - user
    return found


def _internal(name: str, inputs: set[str], class_name: str) -> bool:
    if name in VOCABULARY or name.startswith("_") or re.fullmatch(r"t_\d+", name) or name.startswith(class_name):
        return True
    if name.startswith(f"Eval{class_name}"):  # the other mode's classes
        return True
    return any(name.removeprefix(prefix) in inputs or name.removeprefix(prefix).split("_")[0] in inputs
               for prefix in ("grad_", "tangent_", "v_", "hvp_", "step_", "hessian_"))  # fmt: skip


class _Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.norm = torch.nn.BatchNorm1d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.lin(x)).sum()


def test_the_vocabulary_holds_every_name_the_emitted_styles_use_beside_the_users():
    """What code_names guards against must be every name the module writes where the user's names are in scope:
    a name missing here could shadow an input, or be shadowed by one."""
    m, n = sg.dims("m n")
    x, w = sg.symbols("x", (m, n), requires_grad=True), sg.symbols("w", (n,), requires_grad=True)
    out = st.softmax(x * w, 1).sum() / m
    sources = [sg.codegen(out, [x, w], inputs=[x, w], style=style, name="S")
               for style in ("function", "autograd_function", "hvp", "hessian")]  # fmt: skip
    sources.append(sg.codegen((x * x).sum(), [x], inputs=[x], style="newton", name="S"))
    traced = sg.trace(_Model().double(), torch.randn(4, 3, dtype=torch.float64))
    sources.append(sg.codegen(traced, name="S"))
    user = {"x", "w", "m", "n", *(leaf.name for leaf in [*traced.parameters.values(), *traced.buffers.values()])}
    strays = sorted(n for s in sources for n in _identifiers_beside(s, user) if not _internal(n, user, "S"))
    assert strays == []


# every name of the vocabulary that a tensor may have, as an input's name and as a size's
NAMES = sorted(n for n in VOCABULARY if n.isidentifier())


@pytest.mark.parametrize("name", NAMES)
def test_an_input_named_like_the_modules_own_names_compiles_and_agrees_with_torch(name):
    x = sg.symbols("x", (3,), requires_grad=True)
    other = sg.symbols(name, (3,), requires_grad=True)
    module = sg.compile((x * other.sin()).sum(), [x, other], inputs=[x, other], style="autograd_function")
    assert f"the input {name} is " in module.__symgrad_source__
    gen = torch.Generator().manual_seed(len(name))
    values = [torch.randn(3, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(2)]
    expected = torch.autograd.grad((values[0] * values[1].sin()).sum(), values)
    ours = torch.autograd.grad(module.apply(*values), values)
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", ["output", "grad_x", "t_1", "ctx", "torch", "hvp_x", "v_x"])
def test_second_order_modules_rename_too(name):
    x, other = sg.symbols("x", (2,), requires_grad=True), sg.symbols(name, (2,), requires_grad=True)
    f = (x * x * other).sum()
    module = sg.compile(f, [x, other], inputs=[x, other], style="hessian")
    values = [torch.tensor([0.5, -1.5], dtype=torch.float64), torch.tensor([2.0, 3.0], dtype=torch.float64)]
    expected = torch.autograd.functional.hessian(lambda a, b: (a * a * b).sum(), tuple(values))
    ours = module.hessian(*values)
    for row, row_expected in zip(ours, expected, strict=True):
        for block, block_expected in zip(row, row_expected, strict=True):
            torch.testing.assert_close(block, block_expected, rtol=1e-14, atol=0)


def test_a_size_named_like_an_input_gets_a_code_name_and_the_module_runs_at_other_sizes():
    """The issue's case: a dimension b next to an input b, at a symbolic batch."""

    def loss(a, b):
        return (a * b.tanh()).sum()

    a, b = (torch.randn(3, 2, dtype=torch.float64, requires_grad=True) for _ in range(2))
    traced = sg.trace(loss, a, b, dynamic_shapes={"a": {0: "b"}, "b": {0: "b"}})
    module = sg.compile(traced)
    assert "the size b is b_1" in module.__symgrad_source__
    for batch in (1, 5):
        values = [torch.randn(batch, 2, dtype=torch.float64, requires_grad=True) for _ in range(2)]
        expected = torch.autograd.grad(loss(*values), values)
        ours = torch.autograd.grad(module.apply(*values), values)
        for x, y in zip(ours, expected, strict=True):
            torch.testing.assert_close(x, y, rtol=1e-14, atol=0)


def test_inputs_named_with_underscores_trace_and_compile():
    """``t_`` is the user's, ``_`` and ``_scale`` are names a tensor cannot have: the trace names them itself."""

    def loss(t_, _, _scale, output):
        return (t_ * output + _scale).sum()

    values = [torch.randn(3, dtype=torch.float64, requires_grad=True) for _ in range(4)]
    traced = sg.trace(loss, *values)
    module = sg.compile(traced.output, traced.inputs, inputs=traced.inputs, style="autograd_function")
    expected = torch.autograd.grad(loss(*values), values, allow_unused=True, materialize_grads=True)
    ours = torch.autograd.grad(module.apply(*values), values, allow_unused=True, materialize_grads=True)
    for x, y in zip(ours, expected, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-14, atol=0)
