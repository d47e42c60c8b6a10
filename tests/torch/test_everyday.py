"""Everyday torch spellings through ``sg.trace``: Python's operators (reflected and in place), the common idioms of
normalization code, and every operator dunder of ``torch.Tensor``, against torch's gradients in float64.

Each spelling runs as user code under the trace; its forward value and its gradient (``sg.vjp`` with a random
cotangent) must equal torch's at rtol 1e-9, and its law at a symbolic size must be proved where the spelling
has one.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

import symgrad as sg

RTOL = 1e-9
C = 1.7

EVERYDAY: dict[str, Callable] = {
    "1 / x": lambda x: 1 / x,
    "1.0 / x.sum()": lambda x: 1.0 / x.sum(),
    "math.sqrt(2) / x": lambda x: math.sqrt(2) / x,
    "(x.detach() // c) * x": lambda x: (x.detach() // C) * x,
    "x % c": lambda x: x % C,
    "x.fmod(c)": lambda x: x.fmod(C),
    "x.remainder(c)": lambda x: x.remainder(C),
    "1 / (1 + (-x).exp())": lambda x: 1 / (1 + (-x).exp()),
    "in-place arithmetic": lambda x: _in_place(x),
    "1 / x.shape[-1] * x.sum()": lambda x: 1 / x.shape[-1] * x.sum(),
    "2 - x": lambda x: 2 - x,
    "2 ** x": lambda x: 2**x,
    "-x": lambda x: -x,
    "abs(x)": lambda x: abs(x),
    "x ** 0.5": lambda x: x**0.5,
    "x ** -1": lambda x: x**-1,
    "x / x.norm(dim=-1, keepdim=True)": lambda x: x / x.norm(dim=-1, keepdim=True),
    "x.T @ x / 3": lambda x: x.T @ x / 3,
    "(x > 1) * x": lambda x: (x > 1) * x,
    "x.clamp(min=c)": lambda x: x.clamp(min=C),
    "1 - x.sigmoid()": lambda x: 1 - x.sigmoid(),
    "x.pow(2).mean(-1, keepdim=True).rsqrt() * x": lambda x: x.pow(2).mean(-1, keepdim=True).rsqrt() * x,
    "torch.rsub(x, 1)": lambda x: torch.rsub(x, 1),
    "(x * 1).reciprocal_()": lambda x: (x * 1).reciprocal_(),
    "x.mean() * x.numel() ** -0.5": lambda x: x.mean() * x.numel() ** -0.5,
    "rstd = 1 / torch.sqrt(var + eps)": lambda x: (
        (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
    ),
    "x.sum(1, keepdims=True)": lambda x: x.sum(1, keepdims=True) * x,
    "x.float() in a float64 graph": lambda x: (x.float().exp() * 3).double() * x,
    "torch.where(x > 1, 0, x)": lambda x: torch.where(x > 1, 0, x) * x,
    # numbers made from the symbolic batch m: the law holds at every m (proved at m = 2, traced at m = 3)
    "coeff = 1 / x.shape[0]": lambda x: 1 / x.shape[0] * x.sum(0),
    "x.size(0) ** -0.5 * x": lambda x: x.size(0) ** -0.5 * x,
    "x.sum(0) / (x.shape[0] * 2.0 - 1)": lambda x: x.sum(0) / (x.shape[0] * 2.0 - 1),
}


def _in_place(x: torch.Tensor) -> torch.Tensor:
    y = x * 1
    y += 1
    y /= 2
    y *= 3
    y -= 0.5
    return y


def _example() -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.rand((3, 4), generator=generator, dtype=torch.float64) + 0.5


def _check(fn: Callable, x: torch.Tensor, symbolic: bool = True) -> None:
    traced = sg.trace(fn, x.clone())
    reference_input = x.clone().requires_grad_()
    reference = fn(reference_input)
    got = traced.output
    assert got.shape == tuple(reference.shape)
    _close(got.tolist(), reference.detach())
    generator = torch.Generator().manual_seed(1)
    v = torch.randn(reference.shape, generator=generator, dtype=torch.float64)
    try:
        (expected,) = torch.autograd.grad(reference, reference_input, v)
    except RuntimeError as error:  # torch defines no derivative here (x // y, 2 % x): symgrad refuses it too
        with pytest.raises(sg.SymgradError, match="not implemented"):
            sg.vjp([got], [traced.inputs[0]], [sg.tensor(v.tolist(), dtype="float64")])
        assert "not implemented" in str(error)
        return
    (grad,) = sg.vjp([got], [traced.inputs[0]], [sg.tensor(v.tolist(), dtype="float64")])
    _close(grad.tolist(), expected)
    if symbolic:
        dynamic = sg.trace(fn, x.clone(), dynamic_shapes={"x": {0: "m"}})
        cotangent = sg.symbols("V", dynamic.output.shape)
        proof = sg.prove(dynamic.output, [dynamic.inputs[0]], [cotangent], sizes=[{sg.dims("m")[0]: 2}])
        assert proof.held, str(proof)


def _close(got: object, expected: torch.Tensor) -> None:
    assert torch.allclose(torch.tensor(got, dtype=torch.float64), expected.double(), rtol=RTOL, atol=RTOL), (
        got,
        expected.tolist(),
    )


@pytest.mark.parametrize("name", list(EVERYDAY), ids=list(EVERYDAY))
def test_everyday_spelling_gives_torchs_gradient(name: str) -> None:
    _check(EVERYDAY[name], _example(), symbolic="shape[-1]" not in name and "numel" not in name)


# ── every operator dunder of torch.Tensor ─────────────────────────────────────────────────────────────────
_BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift"]
_UNARY = ["neg", "pos", "abs", "invert"]


def _operand(kind: str) -> torch.Tensor:
    generator = torch.Generator().manual_seed(2)
    if kind == "int":
        return torch.randint(1, 9, (3, 3), generator=generator)
    if kind == "bool":
        return torch.rand((3, 3), generator=generator) > 0.5
    return torch.rand((3, 3), generator=generator, dtype=torch.float64) + 0.5


def _dunder_cases() -> list[tuple[str, str, str]]:
    cases = []
    for name in _BINARY:
        for kind in ("float", "int", "bool"):
            for side in ("", "r", "i"):
                dunder = f"__{side}{name}__"
                if getattr(torch.Tensor, dunder, None) is not None:
                    cases.append((dunder, kind, side))
    cases += [(f"__{name}__", kind, "") for name in _UNARY for kind in ("float", "int", "bool")]
    return cases


DUNDERS = _dunder_cases()


def test_the_dunder_table_is_torchs() -> None:
    """Every operator dunder torch.Tensor has is in the table (so a new one in torch is noticed)."""
    operators = {n for n in dir(torch.Tensor) if n.startswith("__") and n.endswith("__")}
    arithmetic = {n for n in operators if n.strip("_").removeprefix("r").removeprefix("i") in _BINARY + _UNARY}
    assert arithmetic - {d for d, _, _ in DUNDERS} == set()


@pytest.mark.parametrize(("dunder", "kind", "side"), DUNDERS, ids=[f"{d}-{k}" for d, k, _ in DUNDERS])
def test_every_tensor_dunder_traces_as_torch_computes_it(dunder: str, kind: str, side: str) -> None:
    """Each operator on float, int and bool tensors: torch's value and gradient, or torch's own error in torch and
    symgrad alike. A reflected operator takes a Python number on its left (``2 / x``)."""
    x = _operand(kind)
    other = _operand(kind).T.contiguous() if kind != "float" else _operand(kind) * 0.5 + 0.25
    number = {"float": 1.5, "int": 3, "bool": True}[kind]

    def call(t: torch.Tensor) -> torch.Tensor:
        method = getattr(t, dunder)
        if dunder.strip("_") in _UNARY:
            return method()
        if side == "r":
            return method(number)
        return method(other)

    def fn(t: torch.Tensor) -> torch.Tensor:
        return call(t * 1 if t.is_floating_point() else t.clone())

    try:
        result = fn(x.clone())
    except (RuntimeError, TypeError):  # torch refuses it for this dtype (~x of a float): so must the trace
        result = None
    if result is NotImplemented:  # Python would try the other operand's method: no tensor operation here
        return
    if result is None:
        with pytest.raises((RuntimeError, TypeError, sg.SymgradError)):
            sg.trace(fn, x.clone())
        return
    if kind == "float" and dunder not in ("__floordiv__", "__rfloordiv__"):
        _check(fn, x, symbolic=False)
        return
    traced = sg.trace(fn, x.clone())
    expected = fn(x.clone())
    assert traced.output.dtype == str(expected.dtype).removeprefix("torch.")
    got = torch.tensor(traced.output.tolist(), dtype=torch.float64)
    assert torch.equal(got.nan_to_num(7.0), expected.double().nan_to_num(7.0))
