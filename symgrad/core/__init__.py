"""The core: shapes and dimensions, entry symbols, the tensor graph node, the op registry, errors.

A :class:`Tensor` is a node of a torch-like graph: a leaf of symbols (``w_0_1``) with
optional values, explicit formulas, or an op applied to input tensors. The core
owns the registry of ops (:data:`OPS`) but names no op: the families in
:mod:`symgrad.ops` register their rows, and tensor methods look them up by name.
It also prints tensors (torch text and LaTeX), because a tensor names itself by
its expression. The core imports nothing else from symgrad.
"""

from .constructors import dtype_name, formula, full_like, symbols, symbols_like, tensor
from .dims import Dim, Shape, as_shape, dims, format_shape, is_concrete, require_concrete, same_dim
from .errors import (
    AutogradError,
    CheckError,
    InternalError,
    NoDerivativeError,
    ParseError,
    ShapeError,
    SymbolicShapeError,
    SymgradError,
    TorchError,
    UnknownNameError,
    UnsupportedError,
    ValuesUnknownError,
    WorkBudgetError,
)
from .graph import dims_of, topological, topological_all, uniform_constant
from .listing import Listing, listing, shared_nodes
from .printers import LatexPrinter, Printer, TorchPrinter
from .registry import ENGINES, OPS, Op, engine, lookup, register
from .tensor import GradFn, Tensor, apply, auto_name, check_name, constant, wrap

__all__ = [
    "ENGINES",
    "OPS",
    "AutogradError",
    "CheckError",
    "Dim",
    "GradFn",
    "InternalError",
    "LatexPrinter",
    "Listing",
    "NoDerivativeError",
    "Op",
    "ParseError",
    "Printer",
    "Shape",
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
    "apply",
    "as_shape",
    "auto_name",
    "check_name",
    "constant",
    "dims",
    "dims_of",
    "dtype_name",
    "engine",
    "format_shape",
    "formula",
    "full_like",
    "is_concrete",
    "listing",
    "lookup",
    "register",
    "require_concrete",
    "same_dim",
    "shared_nodes",
    "symbols",
    "symbols_like",
    "tensor",
    "topological",
    "topological_all",
    "uniform_constant",
    "wrap",
]
