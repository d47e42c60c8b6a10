"""symgrad: what torch.autograd computes, as formulas.

>>> import symgrad as sg
>>> w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = sg.tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
>>> loss = w @ x
>>> sg.vjp(loss, w, sg.symbols_like(loss, "v")).sympy()
[[v_0_0*x_0_0 + v_0_1*x_0_1, v_0_0*x_1_0 + v_0_1*x_1_1]]
"""

from .autograd import backward
from .codegen import codegen
from .codegen import compile_module as compile  # noqa: A004 - sg.compile, as the issue names it
from .derive import jacobian, vjp
from .dims import dims
from .errors import (
    AutogradError,
    CheckError,
    ParseError,
    ShapeError,
    SymbolicShapeError,
    SymgradError,
    UnknownNameError,
    UnsupportedError,
    ValuesUnknownError,
)
from .parse import parse
from .printing import LatexPrinter, TorchPrinter, listing
from .prove import Proof, prove
from .reverse import law
from .tensor import Tensor, constant, symbols, symbols_like, tensor
from .userfunc import function
from .verify import CheckReport, check
from .version import __version__

__all__ = [
    "AutogradError",
    "CheckError",
    "CheckReport",
    "LatexPrinter",
    "ParseError",
    "Proof",
    "ShapeError",
    "SymbolicShapeError",
    "SymgradError",
    "Tensor",
    "TorchPrinter",
    "UnknownNameError",
    "UnsupportedError",
    "ValuesUnknownError",
    "__version__",
    "backward",
    "check",
    "codegen",
    "compile",
    "constant",
    "dims",
    "function",
    "jacobian",
    "law",
    "listing",
    "parse",
    "prove",
    "symbols",
    "symbols_like",
    "tensor",
    "vjp",
]
