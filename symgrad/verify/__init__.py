"""Verification: every formula symgrad derives is checked against torch, and every law is proved.

- :mod:`.torch_eval`: the same graph evaluated with torch, node by node (float64);
- :mod:`.verify`: :func:`check` compares formulas with numbers substituted against
  ``torch.autograd.backward`` on the same inputs and grad_tensors;
- :mod:`.curvature`: :func:`prove_hessian` and :func:`prove_jacobian`, the same for second-order laws;
- :mod:`.prove`: :func:`prove` proves a law exactly (entrywise, at small distinct sizes: rule by rule, see
  :mod:`.rules`, for the laws symgrad derives) and numerically (torch, at larger sizes); :mod:`.instances` puts
  a graph at concrete sizes, and :mod:`.zeros` decides whether a difference is 0;
- :mod:`.backward`: :func:`verify_backward` proves a hand-written ``torch.autograd.Function``'s backward.

torch is imported only when a check runs. This package imports :mod:`symgrad.derive`,
:mod:`symgrad.ops` and :mod:`symgrad.core`.
"""

from .backward import BackwardVerdict, verify_backward
from .curvature import prove_hessian, prove_jacobian
from .functions import function_class, input_defaults, input_names
from .instances import instantiate, size_assignments
from .prove import Proof, check_numerically, prove
from .torch_eval import evaluate_graph, leaf_assignment, substitute
from .verify import CheckReport, Comparison, check
from .zeros import is_zero, zero_by

__all__ = [
    "BackwardVerdict",
    "CheckReport",
    "Comparison",
    "Proof",
    "check",
    "check_numerically",
    "evaluate_graph",
    "function_class",
    "input_defaults",
    "input_names",
    "instantiate",
    "is_zero",
    "leaf_assignment",
    "prove",
    "prove_hessian",
    "prove_jacobian",
    "size_assignments",
    "substitute",
    "verify_backward",
    "zero_by",
]
