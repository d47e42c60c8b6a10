"""The op table, one family per module: each row says everything symgrad knows about one op.

A row (:class:`symgrad.core.Op`) holds the op's shape rule, its meaning entry by entry
in SymPy, its VJP rule written with symgrad ops, how torch computes it (for the
cross-check), its torch and LaTeX spellings, and the name of torch's backward node.
The families register their rows with the core's registry when imported:
:mod:`.elementwise` (arithmetic, comparisons, functions of one tensor), :mod:`.math_functions` (torch's
trigonometric, gamma, error, Bessel, floating-point and integer functions), :mod:`.reductions`, :mod:`.softmax`,
:mod:`.products`, :mod:`.shape` (layout, joining, padding, basic indexing), :mod:`.creation` (full, empty),
:mod:`.indexing` (gather and scatters), :mod:`.linalg`, :mod:`.nn` (activations and losses) and :mod:`.draws`
(random draws: a dropout's noise, and any other draw torch makes).
Adding an op means one row in one family file, plus a test. This package imports only
:mod:`symgrad.core`.
"""

from ..core.registry import OPS
from . import (
    batch_norm,
    convolution,
    creation,
    draws,
    elementwise,
    indexing,
    linalg,
    math_functions,
    nn,
    normalization,
    pooling,
    products,
    reductions,
    shape,
    softmax,
)
from .calculus import elementwise_derivative, expand_back, to_tensor, unbroadcast
from .functions import amax, first_max, norm2, relu, sigmoid, sign, softplus
from .userfunc import function

__all__ = [
    "OPS",
    "amax",
    "batch_norm",
    "convolution",
    "creation",
    "draws",
    "elementwise",
    "elementwise_derivative",
    "expand_back",
    "first_max",
    "function",
    "indexing",
    "linalg",
    "math_functions",
    "nn",
    "norm2",
    "normalization",
    "pooling",
    "products",
    "reductions",
    "relu",
    "shape",
    "sigmoid",
    "sign",
    "softmax",
    "softplus",
    "to_tensor",
    "unbroadcast",
]
