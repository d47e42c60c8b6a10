"""The core on its own: the op registry, graph walks, the lazy package, and public error names."""

from __future__ import annotations

import subprocess
import sys

import pytest

import symgrad as sg
import symgrad.ops
import symgrad.torch as storch
from symgrad.core import OPS, Op, SymgradError, engine, lookup, register, symbols, topological
from symgrad.core.registry import TAGS


def test_every_op_row_is_complete_and_tagged_with_known_tags():
    for name, op in OPS.items():
        assert op.name == name
        assert set(op.tags) <= TAGS
        assert op.code and op.latex is not None and op.shape is not None and op.meaning is not None
        assert op.vjp is not None, f"{name} has no VJP rule"


def test_an_op_name_is_registered_once():
    with pytest.raises(ValueError, match="defined twice"):
        register(OPS["exp"])


def test_unknown_tags_are_refused():
    with pytest.raises(ValueError, match="unknown tags"):
        Op("probe", None, None, None, "", "", "", tags=frozenset({"linearish"}))


def test_lookup_and_engine_name_what_is_missing():
    with pytest.raises(SymgradError, match="no op named 'no_such_op'"):
        lookup("no_such_op")
    with pytest.raises(SymgradError, match="no teleport engine"):
        engine("teleport")


def test_topological_order_survives_long_chains():
    x = symbols("x", (2,))
    out = x
    for _ in range(5000):  # deeper than Python's recursion limit
        out = out + 1
    order = topological(out)
    assert order[0] is x and order[-1] is out
    assert len(order) == 1 + 2 * 5000  # x, and each add with the constant it wraps


def test_errors_carry_their_public_names():
    with pytest.raises(sg.ShapeError) as caught:
        symbols("a", (2, 3)) @ symbols("b", (2, 3))
    assert type(caught.value).__module__ == "symgrad"
    assert f"{type(caught.value).__module__}.{type(caught.value).__name__}" == "symgrad.ShapeError"


def test_import_symgrad_is_cheap_until_first_use():
    code = (
        "import sys, symgrad; assert 'sympy' not in sys.modules and 'numpy' not in sys.modules; "
        "symgrad.tensor([[1.0]]); assert 'sympy' in sys.modules and 'jinja2' not in sys.modules; "
        "assert 'codegen' in dir(symgrad)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_unknown_attributes_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sg.nope  # noqa: B018


def test_a_concrete_law_of_symbolic_size_inputs_displays_as_a_formula():
    """A bias's gradient over a symbolic batch has a concrete shape but no entries: Jupyter's display
    raised SymbolicShapeError; it shows the formula instead."""
    import symgrad as sg

    (n,) = sg.dims("n")
    X, b = sg.symbols("X", (n, 3)), sg.symbols("b", (3,), requires_grad=True)
    (grad_b,) = sg.law((X + b).tanh().sum(), [b])
    assert (
        grad_b._repr_latex_()
        == r"$\textstyle\sum_{\mathrm{dim}\,0} \left(1 - \tanh\left(X + b\right)^{2}\right) \in \mathbb{R}^{3}$"
    )


def test_a_long_law_shows_whole_in_its_repr_with_shared_parts_named_once():
    """``W1.grad`` at symbolic sizes showed ``named <matmul result h×n>``: a law longer than a label was cut to
    its op's name. It now shows whole, the parts it reads twice named first, as the CLI lists them."""
    import symgrad as sg
    import symgrad.torch as storch

    m, n, c, h = sg.dims("m n c h")
    W1, W2 = sg.symbols("W1", (h, n), requires_grad=True), sg.symbols("W2", (c, h), requires_grad=True)
    b1, X, Y = sg.symbols("b1", (h, 1)), sg.symbols("X", (n, m)), sg.symbols("Y", (c, m))
    ((W2 @ storch.tanh(W1 @ X + b1) - Y) ** 2).mean().backward()
    text = repr(W1.grad)
    assert "result" not in text
    assert text.startswith("tensor(<symbolic h×n>) named\n    t1 = torch.tanh(W1 @ X + b1)\n    ")
    assert text.count("torch.tanh") == 1 and text.endswith("@ X.T")
    Z, W = sg.symbols("Z", (m, n)), sg.symbols("W", (n, c), requires_grad=True)
    y, g = sg.symbols("y", (m,), dtype="int64"), sg.symbols("g", ())
    law = sg.vjp(storch.nn.functional.cross_entropy(Z @ W, y), W, g)  # nothing shared: one line, however long
    expected = "Z.T @ ((torch.softmax(Z @ W, dim=1) - torch.nn.functional.one_hot(y, c)) * (g / m))"
    assert repr(law) == f"tensor(<symbolic n×c>, grad_fn=<MmBackward0>) named {expected}"


def test_a_long_unnamed_result_is_called_by_the_start_of_its_expression():
    """A Hessian law's name was a placeholder ('<mul result n×c×n×c>'): it is its expression's start, cut where
    it says so, with its shape."""
    n, c = sg.dims("n c")
    z = sg.symbols("z", (n, c), requires_grad=True)
    y = sg.symbols("y", (n,), dtype="int64")
    hessian = sg.hessian_law(storch.nn.functional.cross_entropy(z, y), z)
    assert hessian.name.startswith("torch.softmax(z, dim=1) * (") and hessian.name.endswith("… (n×c×n×c)")
