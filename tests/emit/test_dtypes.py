"""Emitted code computes in the dtype torch computes in: for float16, bfloat16, float32 and float64 inputs, every
catalogue module's forward, vjp and autograd.Function give the dtypes torch's forward and torch.autograd give.

The references are the catalogue's own expressions run by real torch (strings of this repository, evaluated
here in a namespace of torch alone; symgrad itself never evaluates text)."""

from __future__ import annotations

import math

import pytest

import symgrad as sg
import symgrad.torch as storch
from symgrad.cli.catalogue import CODE_ITEMS

torch = pytest.importorskip("torch")
F = torch.nn.functional

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
SIZES = {"k": 3, "n": 4, "m": 5, "h": 2, "c": 3, "d": 2}


def _input(name: str, shape: tuple, dtype, *, classes: int | None = None):
    if classes is not None:
        return torch.randint(0, classes, shape)
    if name == "y" and len(shape) == 1:  # binary targets of logistic regression, in the inputs' dtype
        return torch.rand(shape).to(dtype)
    return torch.randn(shape).to(dtype)


def _concrete(shape: tuple) -> tuple:
    return tuple(int(d) if isinstance(d, int) else SIZES[str(d)] for d in shape)


def _reference(item, values: dict):
    namespace = {"torch": torch, "F": F, "sqrt": math.sqrt, **values}
    if item.stem == "softmax_cross_entropy":
        return F.cross_entropy(values["X"] @ values["W"], values["y"])
    if item.stem == "attention_scores":
        q, k, v = values["Q"], values["K"], values["V"]
        return torch.softmax(q @ k.T * (1 / math.sqrt(q.shape[1])), dim=1) @ v
    return eval(item.expression, namespace)  # the catalogue's own expression, with torch


def _cases():
    for item in CODE_ITEMS:
        for dtype in DTYPES:
            yield pytest.param(item, dtype, id=f"{item.stem}-{str(dtype).removeprefix('torch.')}")


@pytest.mark.parametrize(("item", "dtype"), list(_cases()))
def test_catalogue_module_dtypes_are_torchs(item, dtype):
    output, inputs, wrt = item.graph()
    module = sg.compile(output, wrt, inputs=inputs, name=item.class_name, style="autograd_function")
    torch.manual_seed(0)
    values = {}
    for leaf in inputs:
        classes = SIZES["c"] if leaf.dtype == "int64" else None
        values[leaf.name] = _input(leaf.name, _concrete(leaf.shape), dtype, classes=classes)
    reference = _inputs_requiring_grad(values, wrt)
    expected = _reference(item, reference)
    grad_output = torch.randn(expected.shape).to(expected.dtype)
    expected_grads = torch.autograd.grad(expected, [reference[x.name] for x in wrt], grad_output)
    args = [values[leaf.name] for leaf in inputs]

    forward = module.forward(*args)
    assert forward.dtype == expected.dtype
    grads = module.vjp(*args, grad_output)
    assert [g.dtype for g in grads] == [g.dtype for g in expected_grads]

    leaves = _inputs_requiring_grad(values, wrt)
    applied = module.apply(*[leaves[leaf.name] for leaf in inputs])
    assert applied.dtype == expected.dtype
    through_function = torch.autograd.grad(applied, [leaves[x.name] for x in wrt], grad_output)
    assert [g.dtype for g in through_function] == [g.dtype for g in expected_grads]


def _inputs_requiring_grad(values: dict, wrt) -> dict:
    names = {x.name for x in wrt}
    return {name: v.detach().clone().requires_grad_(name in names) for name, v in values.items()}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_a_select_between_numbers_keeps_torchs_default_dtype_in_the_forward(dtype):
    """torch.where(x > 0, 2.0, 0.5) is float32 whatever x's dtype; its gradient is x's dtype, as autograd casts it."""
    (n,) = sg.dims("n")
    x = sg.symbols("x", (n,), requires_grad=True)
    module = sg.compile(storch.where(x > 0, 2.0, 0.5) * x.sum(), [x], name="Select", style="autograd_function")
    real = torch.randn(4).to(dtype).requires_grad_()
    expected = torch.where(real > 0, 2.0, 0.5) * real.sum()
    grad_output = torch.randn(4).to(expected.dtype)
    (expected_grad,) = torch.autograd.grad(expected, [real], grad_output)
    assert module.forward(real).dtype == expected.dtype == torch.float32
    assert module.vjp(real, grad_output)[0].dtype == expected_grad.dtype == dtype
    assert module.forward_and_vjp(real, grad_output)[1][0].dtype == dtype
    (through_function,) = torch.autograd.grad(module.apply(real), [real], grad_output)
    assert through_function.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_an_integer_count_in_a_zero_gradient_does_not_make_it_float32(dtype):
    """floor's zero gradient reaches min's tie count, a where of 1 and 0 (int64 in torch): 0 / count is float32
    at run time, and the emitted gradient must come back in x's dtype, as torch's does."""
    k, n = sg.dims("k n")
    x = sg.symbols("x", (k, n), requires_grad=True)
    module = sg.compile(storch.min(x).floor(), [x], name="FloorOfMin", style="autograd_function")
    real = torch.tensor([[0.0, 1.0], [0.0, 2.0]]).to(dtype).requires_grad_()
    (expected,) = torch.autograd.grad(torch.min(real).floor(), [real], torch.tensor(1.0).to(dtype))
    (got,) = module.vjp(real, torch.tensor(1.0).to(dtype))
    assert got.dtype == expected.dtype == dtype
    assert torch.equal(got, expected)
