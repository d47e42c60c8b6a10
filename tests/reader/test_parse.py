"""symgrad.parse: torch-style strings become the same graphs as Python code, and nothing in them runs."""

from __future__ import annotations

import ast
import builtins
import pathlib
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
import sympy
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import symgrad.torch as torch
from symgrad.core import Tensor, constant, symbols, tensor
from symgrad.core.dims import dims
from symgrad.core.errors import ParseError, ShapeError, SymgradError, UnknownNameError, UnsupportedError
from symgrad.ops import function
from symgrad.reader import MAX_LITERAL, parse, parse_shape, parse_values

F = torch.nn.functional
SHAPES = {"W": (2, 3), "x": (3, 1), "b": (2, 1), "v": (3,)}


def leaves() -> SimpleNamespace:
    return SimpleNamespace(**{name: symbols(name, shape) for name, shape in SHAPES.items()})


# ── the same graph as Python ─────────────────────────────────────────────────
SAME_AS_PYTHON = [
    ("torch.tanh(W @ x + b)", lambda t: torch.tanh(t.W @ t.x + t.b)),
    ("torch.mm(W, x)", lambda t: torch.mm(t.W, t.x)),
    ("x.sum(dim=0)", lambda t: t.x.sum(dim=0)),
    ("torch.nn.functional.relu(W @ x).mean()", lambda t: F.relu(t.W @ t.x).mean()),
    ("F.relu(W @ x)", lambda t: F.relu(t.W @ t.x)),
    ("nn.functional.sigmoid(b) * F.tanh(b)", lambda t: F.sigmoid(t.b) * F.tanh(t.b)),
    ("(W @ x).T", lambda t: (t.W @ t.x).T),
    ("W.mT + W.t().T.T", lambda t: t.W.mT + t.W.t().T.T),
    ("W[0, 1:]", lambda t: t.W[0, 1:]),
    ("W[..., None][-1, ::2]", lambda t: t.W[..., None][-1, ::2]),
    ("W[(1, 2)] + v[1][None]", lambda t: t.W[1, 2] + t.v[1][None]),
    ("W ** 2 / 3 - -b", lambda t: t.W**2 / 3 - -t.b),
    ("+v * 2.5 + 1 - 2 * 3", lambda t: +t.v * 2.5 + 1 - 6),
    ("torch.tensor([[1, 2, 3]]) * W", lambda t: constant([[1, 2, 3]], dtype="int64") * t.W),
    ("torch.tensor([[0.5], [2]]) + b", lambda t: constant([[0.5], [2.0]]) + t.b),
    ("W.sum(dim=(0, 1), keepdim=True)", lambda t: t.W.sum(dim=(0, 1), keepdim=True)),
    ("torch.sum(W, 1) + torch.mean(W, dim=1)", lambda t: torch.sum(t.W, 1) + torch.mean(t.W, dim=1)),
    ("W.mean(dim=[0], keepdim=True)", lambda t: t.W.mean(dim=[0], keepdim=True)),
    ("W.reshape(3, 2) + W.view(-1).reshape((3, 2))", lambda t: t.W.reshape(3, 2) + t.W.view(-1).reshape((3, 2))),
    ("W.permute(1, 0) @ torch.transpose(W.T, 0, 1)", lambda t: t.W.permute(1, 0) @ torch.transpose(t.W.T, 0, 1)),
    ("W.flatten() + torch.flatten(W)", lambda t: t.W.flatten() + torch.flatten(t.W)),
    ("v.unsqueeze(0) * torch.unsqueeze(v, 1)", lambda t: t.v.unsqueeze(0) * torch.unsqueeze(t.v, 1)),
    (
        "torch.exp(v) + torch.log(v) * torch.sin(v) - torch.cos(v)",
        lambda t: torch.exp(t.v) + torch.log(t.v) * torch.sin(t.v) - torch.cos(t.v),
    ),
    ("v.exp().log().sqrt().abs().sin().cos().tanh()", lambda t: t.v.exp().log().sqrt().abs().sin().cos().tanh()),
    ("torch.sqrt(torch.abs(v)) + torch.sigmoid(v).relu()", lambda t: torch.sqrt(torch.abs(t.v)) + t.v.sigmoid().relu()),
    ("torch.pow(v, 3) + v.pow(2) + 2 ** v + v ** -0.5", lambda t: torch.pow(t.v, 3) + t.v.pow(2) + 2**t.v + t.v**-0.5),
    ("v.add(v).sub(1).mul(2).div(3).neg()", lambda t: t.v.add(t.v).sub(1).mul(2).div(3).neg()),
    (
        "torch.add(v, v, alpha=2) - torch.sub(v, 1) + torch.mul(2, v) / torch.div(v, 2) + torch.neg(v)",
        lambda t: torch.add(t.v, t.v, alpha=2) - torch.sub(t.v, 1) + torch.mul(2, t.v) / torch.div(t.v, 2) - t.v,
    ),
    (
        "torch.matmul(W, v) + W.mm(x).sum(1) + W.matmul(v)",
        lambda t: torch.matmul(t.W, t.v) + (t.W @ t.x).sum(1) + t.W @ t.v,
    ),
    ("torch.ones_like(v) * v + torch.zeros_like(v)", lambda t: torch.ones_like(t.v) * t.v + torch.zeros_like(t.v)),
    ("torch.full_like(v, 2) * v", lambda t: torch.full_like(t.v, 2) * t.v),
    ("(W @ x).sum() / 4", lambda t: (t.W @ t.x).sum() / 4),
    ("torch.where(v > 0, v, 0) * (v <= 1)", lambda t: torch.where(t.v > 0, t.v, 0) * (t.v <= 1)),
    ("torch.where(b >= v[0], b, -b) + (v != 2) * v", lambda t: torch.where(t.b >= t.v[0], t.b, -t.b) + t.v.ne(2) * t.v),
    ("(0.5 < v) * (v == v) * (2 == v) * v", lambda t: (0.5 < t.v) * t.v.eq(t.v) * t.v.eq(2) * t.v),
    ("v", lambda t: t.v),
]


@pytest.mark.parametrize(("text", "build"), SAME_AS_PYTHON, ids=[text for text, _ in SAME_AS_PYTHON])
def test_same_formulas_as_python(text, build):
    got, want = parse(text, SHAPES), build(leaves())
    assert got.shape == want.shape
    assert got.sympy() == want.sympy()
    assert got.requires_grad


def test_each_name_is_one_tensor():
    y = parse("x * x + x", {"x": (2,)})
    product, x = y.inputs
    assert product.inputs[0] is product.inputs[1] is x
    assert list(y.leaves()) == ["x"]


def test_number_expression_gives_a_constant():
    assert parse("2 * 3 - 1").sympy() == 5
    assert parse("1 / 4").sympy() == sympy.Float(0.25)


def test_symbolic_dimensions():
    k, n = dims("k n")
    assert parse("W @ x", {"W": ("k", "n"), "x": (n, 1)}).shape == (k, 1)
    assert parse("W.T.sum(dim=1)", {"W": "k, n"}).shape == (n,)


def test_user_functions():
    f = function("f", lambda t: t**3 + sympy.sin(t))
    x = symbols("x", (2,))
    assert parse("f(x) + 1", {"x": (2,)}, functions={"f": f}).sympy() == (f(x) + 1).sympy()
    with pytest.raises(ParseError, match="both a tensor and a function"):
        parse("f(x)", {"x": (2,), "f": (1,)}, functions={"f": f})
    with pytest.raises(UnsupportedError, match="call it"):
        parse("f + x", {"x": (2,)}, functions={"f": f})


# ── values and requires_grad ─────────────────────────────────────────────────
def test_values_flow_through():
    y = parse("w @ x", values={"w": [[1, 2]], "x": [[3], [4]]})
    assert y.tolist() == [[11.0]]
    assert parse("x.sum()", values={"x": [[1, 2], [3, 4]]}).item() == 10.0
    assert parse("x * 2", values={"x": np.array([1.5, 2.0])}).tolist() == [3.0, 4.0]
    assert parse("x + 1", values={"x": "[[1, 2]]"}).tolist() == [[2.0, 3.0]]


def test_values_match_python():
    y = parse("torch.sigmoid(w @ x + b).sum()", {"b": (1, 1)}, values={"w": [[1, -1]], "x": [[0.5], [2]]})
    w, x, b = tensor([[1.0, -1.0]], name="w"), tensor([[0.5], [2.0]], name="x"), symbols("b", (1, 1))
    assert y.sympy() == torch.sigmoid(w @ x + b).sum().sympy()
    assert y.leaves()["w"].tolist() == [[1.0, -1.0]]


def test_values_and_shapes_must_agree():
    assert parse("x", {"x": (1, 2)}, {"x": [[1, 2]]}).shape == (1, 2)
    with pytest.raises(ShapeError, match=r"2×1.*1×2"):
        parse("x", {"x": (1, 2)}, {"x": [[1], [2]]})
    with pytest.raises(ParseError, match="different lengths"):
        parse("x", values={"x": [[1], [1, 2]]})
    with pytest.raises(ParseError, match="only numbers"):
        parse("x", values={"x": ["__import__('os').system('touch pwned')"]})


def test_requires_grad():
    assert {n: t.requires_grad for n, t in parse("w * x", SHAPES | {"w": (3, 1)}).leaves().items()} == {
        "w": True,
        "x": True,
    }
    y = parse("w * x", {"w": (3, 1), "x": (3, 1)}, requires_grad=["w"])
    assert {n: t.requires_grad for n, t in y.leaves().items()} == {"w": True, "x": False}
    assert not parse("w * x", {"w": (1,), "x": (1,)}, requires_grad=False).requires_grad
    assert parse("w * x", {"w": (1,), "x": (1,)}, requires_grad="x").leaves()["x"].requires_grad
    with pytest.raises(UnknownNameError, match="known tensors: w, x"):
        parse("w", {"w": (1,), "x": (1,)}, requires_grad=["z"])


def test_backward_through_parsed_graph():
    y = parse("(w @ x).sum()", values={"w": [[1, 2]], "x": [[3], [4]]}, requires_grad=["w"])
    y.backward()
    assert y.leaves()["w"].grad.tolist() == [[3.0, 4.0]]
    assert y.leaves()["x"].grad is None


# ── hostile input: refused, never run ────────────────────────────────────────
HOSTILE = [
    ("__import__('os').system('touch pwned')", UnsupportedError),
    ("torch.tanh(x).__class__.__init__.__globals__['os'].system('touch pwned')", UnsupportedError),
    ("().__class__.__mro__", UnsupportedError),
    ("lambda: 0", UnsupportedError),
    ("x.__dict__", UnsupportedError),
    ("[c for c in ()]", UnsupportedError),
    ("{c: c for c in x}", UnsupportedError),
    ("(c for c in x)", UnsupportedError),
    ("open('f')", UnsupportedError),
    ("open(x)", UnsupportedError),
    ("getattr(x, 'y')", UnsupportedError),
    ("eval(x)", UnsupportedError),
    ("os.system(x)", UnsupportedError),
    ("torch.load(x)", UnsupportedError),
    ("torch.nn.Module(x)", UnsupportedError),
    ("x.register_hook(x)", UnsupportedError),
    ("x.sum.__self__", UnsupportedError),
    ("x._values", UnsupportedError),
    ("_x", UnsupportedError),
    ("x.sum(_dim=0)", UnsupportedError),
    ("x if x else x", UnsupportedError),
    ('"abc"', UnsupportedError),
    ("b'abc'", UnsupportedError),
    ("1j * x", UnsupportedError),
    ('f"{x}"', UnsupportedError),
    ("(y := x)", UnsupportedError),
    ("await x", UnsupportedError),
    ("(yield)", UnsupportedError),
    ("{x}", UnsupportedError),
    ("{1: x}", UnsupportedError),
    ("0 < x < 1", UnsupportedError),
    ("x is x", UnsupportedError),
    ("x and x", UnsupportedError),
    ("not x", UnsupportedError),
    ("~x", UnsupportedError),
    ("x // 2", UnsupportedError),
    ("x % 2", UnsupportedError),
    ("torch.tanh(*x)", UnsupportedError),
    ("torch.tanh(**x)", UnsupportedError),
    ("x[x]", UnsupportedError),
    ("x + (1, 2)", UnsupportedError),
    ("x.sum(dim=x)", UnsupportedError),
    ("2 ** 10 ** 10", ParseError),
    ("x ** 1000000", ParseError),
    ("torch.pow(x, 65)", ParseError),
    ("x.pow(exponent=-1000)", ParseError),
    ("x ** torch.tensor(100)", ParseError),
    ("(torch.tensor(2) ** 64) ** 64", ParseError),
    ("((x - x + 2) ** 8) ** 9", ParseError),
    ("torch.tensor(2) ** ((x - x + 2) ** 64)", ParseError),
    ("10 ** 12 * 10 ** 12", ParseError),
    ("1e999 * x", ParseError),
    ("123456789012345 * x", ParseError),
    ("1" * 5000, ParseError),
    ("(" * 200 + "x" + ")" * 200, ParseError),
    ("-" * 200 + "x", ParseError),
    ("x" + " + x" * 100, ParseError),
    ("torch.tanh(" * 100 + "x" + ")" * 100, ParseError),
    ("[" + "1," * 4999 + "]", ParseError),
    ("'" + "a" * 20_000 + "'", ParseError),
    ("x\0", ParseError),
    ("x +", ParseError),
]


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A scratch working directory, with eval and exec made to fail loudly."""

    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec was called")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    return tmp_path


@pytest.mark.parametrize(("text", "error"), HOSTILE, ids=[text[:40] for text, _ in HOSTILE])
def test_hostile_input_is_refused(sandbox, text, error):
    start = time.process_time()
    with pytest.raises(error) as caught:
        parse(text, {"x": (2,)})
    assert time.process_time() - start < 2
    assert "\n" not in str(caught.value)
    assert str(caught.value)
    assert not list(sandbox.iterdir()), "something was written"


def test_limits_are_parse_errors_not_unsupported():
    for text in ["2 ** 10 ** 10", "x ** 1000000", "(" * 200 + "x" + ")" * 200, "x" * 20_000]:
        with pytest.raises(ParseError) as caught:
            parse(text, {"x": (2,)})
        assert not isinstance(caught.value, UnsupportedError), text


@pytest.mark.parametrize("module", ["symgrad.reader.syntax", "symgrad.reader.builder"])
def test_parse_never_names_eval(module):
    """The reader reads text only through ast.parse: no eval, exec, compile, sympify, parse_expr, importlib."""
    tree = ast.parse(pathlib.Path(sys.modules[module].__file__).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {alias.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for alias in n.names}
    assert not names & {"eval", "exec", "compile", "sympify", "parse_expr", "importlib", "__import__", "import_module"}


# ── error messages ───────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("text", "error", "pattern"),
    [
        ("y + 1", UnknownNameError, r"unknown name 'y'; known tensors: w, x$"),
        ("torch.foo(x)", UnsupportedError, r"^unknown torch\.foo\(\): torch has no such name; did you mean "),
        (
            "torch.tnah(x)",
            UnsupportedError,
            r"^unknown torch\.tnah\(\): torch has no such name; did you mean torch\.tanh\?$",
        ),
        ("F.gelux(x)", UnsupportedError, r"did you mean F\.gelu or "),
        ("torch.TANH(x)", UnsupportedError, r"did you mean torch\.tanh or "),
        ("torch.linalg.inverse(x)", UnsupportedError, r"did you mean torch\.linalg\.inv\?$"),
        ("torch.histc(x)", UnsupportedError, r"^torch\.histc\(\) is torch's, and symgrad does not support it yet$"),
        ("F.softmax(x)", UnsupportedError, r"without dim"),
        ("x.smu()", UnsupportedError, r"^unknown method \.smu\(\): torch has no such name; did you mean \.sum or "),
        ("tanh(x)", UnsupportedError, r"^tanh\(\) is torch's: call it as torch\.tanh\(\.\.\.\)$"),
        ("foo(x)", UnsupportedError, r"^unknown function foo\(\)"),
        ("torch.fft.fft(x)", UnsupportedError, r"unsupported module torch\.fft"),
        ("x.foo", UnsupportedError, r"attribute \.foo is not supported"),
        ("torch.tanh", UnsupportedError, "call functions"),
        ("torch", UnsupportedError, "module"),
        ("x(1)", UnsupportedError, "not a function"),
        ("lambda: 0", UnsupportedError, "lambda"),
        ("[c for c in x]", UnsupportedError, "list comprehension"),
        ("x if x else x", UnsupportedError, "conditional expression"),
        ("(y := x)", UnsupportedError, "assignment expression"),
        ("x.__dict__", UnsupportedError, "__dict__"),
        ("x // 2", UnsupportedError, "operator //"),
        ("x +", ParseError, r"^syntax error at column \d+: "),
        ("w @@ x", ParseError, r"^syntax error at column 4: invalid syntax"),
        ("  w @@ x", ParseError, r"^syntax error at column 6: "),
        ("x ** 100", ParseError, r"exponent 100 is too large"),
        ("x" * 10_001, ParseError, r"too long: 10001 characters \(limit 10000\)"),
        ("-" * 100 + "x", ParseError, "nested too deeply"),
        ("1 / 0", ParseError, "division by zero"),
        ("(-8) ** 0.5", ParseError, "complex"),
        ("torch.tanh(x, 1)", ParseError, r"bad arguments to torch\.tanh\(\)"),
        ("torch.tensor([[1, 2], [3]])", ParseError, "different lengths"),
        ("torch.tensor([x])", UnsupportedError, "numbers"),
        ("x[1.5]", UnsupportedError, "indices"),
        ("(1, 2)", UnsupportedError, "must give a tensor"),
        ("torch.sum(2)", UnsupportedError, r"torch\.sum\(\) needs a tensor, not int"),
        ("F.relu(input=True)", UnsupportedError, "needs a tensor, not bool"),
        ("torch.add(x, True)", UnsupportedError, r"torch\.add\(\) needs tensors or numbers, not bool"),
        ("x.mul(None)", UnsupportedError, r"\.mul\(\) needs tensors or numbers, not NoneType"),
        ("x + None", UnsupportedError, r"operator \+ needs tensors or numbers"),
        ("0 < x < 1", UnsupportedError, "chained comparison is not supported; compare two things at a time"),
        ("1 < 2", UnsupportedError, "compares tensors; both sides are numbers"),
        ("x > None", UnsupportedError, "operator > needs tensors or numbers"),
    ],
)
def test_error_messages(text, error, pattern):
    with pytest.raises(error, match=pattern) as caught:
        parse(text, {"w": (1, 2), "x": (2,)})
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [("w @ w", r"1x2 and 1x2"), ("w + v", r"shapes 1×2 and 3"), ("torch.mm(x, w)", "matrix"), ("w.reshape(3)", "3")],
)
def test_shape_errors_propagate(text, pattern):
    with pytest.raises(ShapeError, match=pattern) as caught:
        parse(text, {"w": (1, 2), "x": (2,), "v": (3,)})
    assert "\n" not in str(caught.value)


def test_messages_stay_on_one_line_when_a_tensor_repr_gets_in():
    with pytest.raises(ShapeError) as caught:
        parse("w.reshape(2, s)", {"w": (2,), "s": ()})
    assert "\n" not in str(caught.value)


def test_positional_flags_and_numbers():
    w = symbols("w", (2, 3))
    assert parse("w.sum(0, True)", {"w": (2, 3)}).sympy() == w.sum(0, keepdim=True).sympy()
    assert parse("torch.add(2, w)", {"w": (2, 3)}).sympy() == (2 + w).sympy()


# ── parse_values and parse_shape ─────────────────────────────────────────────
@pytest.mark.parametrize(
    ("text", "expected"),
    [("[[1,1],[2,2]]", [[1, 1], [2, 2]]), ("3.5", 3.5), ("-2", -2), ("[1e-3, -4, +5]", [0.001, -4, 5]), ("[]", [])],
)
def test_parse_values(text, expected):
    assert parse_values(text) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[[1], [1, 2]]", ParseError),
        ("[x]", UnsupportedError),
        ("[True]", UnsupportedError),
        ("'abc'", UnsupportedError),
        ("[1, 2] + [3]", UnsupportedError),
        ("__import__('os').system('touch pwned')", UnsupportedError),
        ("[" + "0," * (MAX_LITERAL + 1) + "]", ParseError),
        ("[" * 100 + "]" * 100, ParseError),
        ("1e999", ParseError),
    ],
    ids=lambda value: value[:30] if isinstance(value, str) else value.__name__,
)
def test_parse_values_refuses(sandbox, text, error):
    with pytest.raises(error) as caught:
        parse_values(text)
    assert "\n" not in str(caught.value)
    assert not list(sandbox.iterdir())


def test_parse_shape():
    k, n = dims("k n")
    assert parse_shape("1,2") == (1, 2)
    assert parse_shape("k,n") == (k, n)
    assert parse_shape("k, 3") == (k, 3)
    assert parse_shape("(2, 3)") == parse_shape("[2, 3]") == parse_shape("2×3") == (2, 3)
    assert parse_shape("4") == parse_shape("4,") == (4,)
    assert parse_shape("") == ()


@pytest.mark.parametrize("text", ["-1", "1.5", "a b", "1,,2", "__class__", "lambda", "x; import os", "10" * 10])
def test_parse_shape_refuses(text):
    with pytest.raises(ParseError, match="bad size"):
        parse_shape(text)


# ── properties ───────────────────────────────────────────────────────────────
NAMES = {"a": (2,), "b": (2,)}
BINARY = {"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q}
UNARY = {
    "torch.tanh": torch.tanh,
    "torch.sin": torch.sin,
    "F.relu": F.relu,
    "torch.sigmoid": torch.sigmoid,
    "torch.exp": torch.exp,
}

leaf = st.sampled_from([("a", lambda t: t["a"]), ("b", lambda t: t["b"]), ("2", lambda t: 2), ("0.5", lambda t: 0.5)])


def _extend(children):
    binary = st.tuples(children, st.sampled_from(sorted(BINARY)), children).map(
        lambda p: (f"({p[0][0]} {p[1]} {p[2][0]})", lambda t, p=p: BINARY[p[1]](p[0][1](t), p[2][1](t)))
    )
    unary = st.tuples(st.sampled_from(sorted(UNARY)), children).map(
        lambda p: (f"{p[0]}({p[1][0]})", lambda t, p=p: _unary(p[0], p[1][1](t)))
    )
    methods = st.tuples(children, st.sampled_from([".sum()", "[0]", ".T", " ** 2", ".neg()"])).map(
        lambda p: (f"({p[0][0]}){p[1]}", lambda t, p=p: _method(p[0][1](t), p[1]))
    )
    return st.one_of(binary, unary, methods)


def _unary(name, value):
    if not isinstance(value, Tensor):
        raise UnsupportedError("torch functions take a tensor, as in torch")  # what parse says
    return UNARY[name](value)


def _method(value, suffix):
    if not isinstance(value, Tensor):
        if suffix == " ** 2":
            return value**2
        raise UnsupportedError("numbers have no methods, attributes or indices")  # what parse says
    return {".sum()": value.sum, "[0]": lambda: value[0], ".T": lambda: value.T, " ** 2": lambda: value**2}.get(
        suffix, value.neg
    )()


@settings(max_examples=examples(60), deadline=None)
@given(st.recursive(leaf, _extend, max_leaves=6))
def test_random_expressions_match_python(case):
    text, build = case
    tensors = {name: symbols(name, shape) for name, shape in NAMES.items()}
    try:
        want = build(tensors)
    except (SymgradError, IndexError, RuntimeError) as exc:
        with pytest.raises(type(exc)):
            parse(text, NAMES)
        return
    got = parse(text, NAMES)
    want_formula = want.sympy() if isinstance(want, Tensor) else want
    assert got.sympy() == want_formula, text


TOKENS = ["x", "w", "torch", ".", "tanh", "sum", "T", "(", ")", "[", "]", ",", ":", "+", "-", "*", "/", "**", "@"]
TOKENS += ["0", "1", "2.5", "None", "...", "dim=", "keepdim=True", "lambda", "__class__", "'a'", " ", "F", "relu"]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=14))
def test_random_text_is_parsed_or_refused_cleanly(tokens):
    text = "".join(tokens)
    try:
        result = parse(text, {"x": (2, 2), "w": (2,)})
    except (SymgradError, IndexError, RuntimeError, ValueError) as exc:
        assert "\n" not in str(exc), text
    else:
        assert isinstance(result, Tensor)


def test_a_dimension_name_of_a_shape_is_a_size_in_the_expression():
    k, n = dims("k n")
    out = parse("torch.nn.functional.layer_norm(X @ W.T, (k,)).sum()", {"X": ("m", "n"), "W": ("k", "n")})
    assert out.shape == ()
    assert parse("X.reshape(k, -1)", {"X": ("k", "n")}).shape == (k, n)
    with pytest.raises(UnknownNameError, match="unknown name 'q'"):
        parse("X.reshape(q, -1)", {"X": ("k", "n")})


@pytest.mark.parametrize(
    ("text", "shapes", "message"),
    [
        ("W @ x", {"W": ("k", "n"), "x": ("m",)}, "W @ x: W is k×n, x is m; n and m must match; torch: size mismatch"),
        (
            "torch.mm(W, X)",
            {"W": (2, 3), "X": (4, 5)},
            "torch.mm(W, X): W is 2×3, X is 4×5; 3 and 4 must match; torch:",
        ),
        (
            "torch.tanh(W @ X + b)",
            {"W": (2, 3), "X": (3, 4), "b": (3, 1)},
            "W @ X + b: (W @ X) is 2×4, b is 3×1; torch:",
        ),
    ],
)
def test_a_shape_error_names_the_users_own_tensors_and_sizes(text, shapes, message):
    """The part of the expression, each operand in the user's words with its shape, the sizes a product
    contracts, then torch's own message."""
    with pytest.raises(ShapeError) as caught:
        parse(text, shapes=shapes)
    assert str(caught.value).startswith(message)


def test_a_name_in_another_case_or_misspelt_gets_the_tensor_it_meant():
    with pytest.raises(UnknownNameError, match=r"^unknown name 'w'; did you mean W\?$"):
        parse("w.sum()", shapes={"W": (2, 3)})
    with pytest.raises(UnknownNameError, match=r"names w, not a tensor here; did you mean W\?$"):
        parse("W.sum()", shapes={"W": (2, 3)}, requires_grad=["w"])
    with pytest.raises(UnknownNameError, match=r"^unknown name 'q'; known tensors: W$"):
        parse("q.sum()", shapes={"W": (2, 3)})


def test_a_fullwidth_name_is_the_name_python_reads():
    """Python reads ``ｘ`` in an expression as ``x`` (NFKC); a shape, values or requires_grad given as ``ｘ`` names
    the same tensor, and two spellings of one name are refused."""
    out = parse("ｘ.sum()", shapes={"ｘ": (2,)}, requires_grad=["ｘ"])
    (leaf,) = out.leaves().values()
    assert leaf.name == "x" and leaf.requires_grad
    with pytest.raises(ParseError, match="are one name to Python"):
        parse("x.sum()", shapes={"ｘ": (2,), "x": (2,)})
