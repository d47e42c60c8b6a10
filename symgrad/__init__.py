"""symgrad: what torch.autograd computes, as formulas.

>>> import symgrad as sg
>>> w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = sg.tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
>>> loss = w @ x
>>> sg.vjp(loss, w, sg.symbols_like(loss, "v")).sympy()
[[v_0_0*x_0_0 + v_0_1*x_0_1, v_0_0*x_1_0 + v_0_1*x_1_1]]

The package is built in layers (see the README, "How symgrad is built"); this
module only re-exports their public names. It loads them on first use, so that
``import symgrad`` costs no more than it must: SymPy, NumPy and the op table load
with the first tensor, Jinja2 with the first emitted module or document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:  # what the names below resolve to, for readers and type checkers
    from .core import (
        AutogradError,
        CheckError,
        InternalError,
        LatexPrinter,
        ParseError,
        ShapeError,
        SymbolicShapeError,
        SymgradError,
        Tensor,
        TorchError,
        TorchPrinter,
        UnknownNameError,
        UnsupportedError,
        ValuesUnknownError,
        WorkBudgetError,
        constant,
        dims,
        listing,
        symbols,
        symbols_like,
        tensor,
    )
    from .derive import (
        backward,
        gauss_newton_law,
        hessian_law,
        hvp_law,
        jacobian,
        jacobian_law,
        jvp,
        law,
        vjp,
    )
    from .emit import codegen, compile  # noqa: A004 - sg.compile is the public name
    from .ops import function
    from .reader import parse
    from .report import explain
    from .report.graph import graph
    from .torch.tracing import trace
    from .verify import CheckReport, Proof, check, prove, prove_hessian, prove_jacobian, verify_backward

_WHERE = {
    "core": (
        "AutogradError CheckError InternalError LatexPrinter ParseError ShapeError SymbolicShapeError SymgradError "
        "Tensor TorchError "
        "TorchPrinter UnknownNameError UnsupportedError ValuesUnknownError WorkBudgetError "
        "constant dims listing symbols symbols_like tensor"
    ),
    "ops": "function",
    "derive": "backward gauss_newton_law hessian_law hvp_law jacobian jacobian_law jvp law vjp",
    "verify": "CheckReport Proof check prove prove_hessian prove_jacobian verify_backward",
    "emit": "codegen compile",
    "report": "explain",
    "graph": "graph",
    "reader": "parse",
    "tracing": "trace",
}
_PACKAGE_OF = {name: package for package, names in _WHERE.items() for name in names.split()}

__all__ = [
    "AutogradError",
    "CheckError",
    "CheckReport",
    "InternalError",
    "LatexPrinter",
    "ParseError",
    "Proof",
    "ShapeError",
    "SymbolicShapeError",
    "SymgradError",
    "Tensor",
    "TorchError",
    "TorchPrinter",
    "UnknownNameError",
    "UnsupportedError",
    "ValuesUnknownError",
    "WorkBudgetError",
    "__version__",
    "backward",
    "check",
    "codegen",
    "compile",
    "constant",
    "dims",
    "explain",
    "function",
    "gauss_newton_law",
    "graph",
    "hessian_law",
    "hvp_law",
    "jacobian",
    "jacobian_law",
    "jvp",
    "law",
    "listing",
    "parse",
    "prove",
    "prove_hessian",
    "prove_jacobian",
    "symbols",
    "symbols_like",
    "tensor",
    "trace",
    "verify_backward",
    "vjp",
]


def _package(name: str) -> Any:
    """The layer that defines ``name``; the op table and the autograd engine come with any of them."""
    from . import derive  # noqa: F401 - every tensor needs the op table and the backward engine

    # Deferred on purpose (see the module docstring): these imports run once, on first use.
    if name == "verify":
        from . import verify as package
    elif name == "emit":
        from . import emit as package
    elif name == "report":
        from . import report as package
    elif name == "graph":
        from .report import graph as package
    elif name == "reader":
        from . import reader as package
    elif name == "tracing":
        from .torch import tracing as package
    elif name == "ops":
        from . import ops as package
    elif name == "derive":
        from . import derive as package
    else:
        from . import core as package
    return package


def __getattr__(name: str) -> Any:
    package = _PACKAGE_OF.get(name)
    if package is None:
        raise AttributeError(f"module 'symgrad' has no attribute {name!r}")
    value = getattr(_package(package), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PACKAGE_OF))
