"""Derivation: entrywise Jacobians and VJPs, torch's backward semantics, and reverse-mode laws.

- :mod:`.entrywise`: the Jacobian by SymPy differentiation of each entry (only the entries
  that contain a symbol), and vᵀJ as its contraction with a grad_tensor: the ground truth
  for small concrete shapes;
- :mod:`.autograd`: ``backward`` as torch has it (implicit grads, accumulation into ``.grad``,
  ``retain_graph``), registered as the core's backward engine;
- :mod:`.forward`: forward mode, J·t, from each op's JVP rule (or its VJP rule, transposed);
- :mod:`.second_order`: Hessian, HVP and Gauss–Newton laws (a gradient law differentiated again,
  batched over a basis by :mod:`.batching` where a whole tensor is asked for); a column differentiated as a
  vector (:mod:`.replacing` puts it back), and a layer's weight in block form (:mod:`.layer_curvature`);
- :mod:`.reverse`: reverse mode over the graph with one VJP rule per op, giving laws such as
  ``V @ X.T`` that hold for symbolic sizes; :mod:`.simplify` rewrites them as a person would, with the
  identity products of :mod:`.identities` and the size-1 dims of :mod:`.unit_dims` as tables of rules.

This package imports :mod:`symgrad.ops` and
:mod:`symgrad.core` only.
"""

from .. import ops  # noqa: F401 - the op table must be registered before anything is derived
from .autograd import backward, grad
from .entrywise import as_grad_tensor, jacobian, sparse_jacobian, vjp, vjp_entries
from .forward import jvp
from .reverse import implicit_grad, law, needed_nodes
from .second_order import gauss_newton_law, hessian_law, hvp_law, jacobian_law
from .simplify import op_count, simplify

__all__ = [
    "as_grad_tensor",
    "backward",
    "gauss_newton_law",
    "grad",
    "hessian_law",
    "hvp_law",
    "implicit_grad",
    "jacobian",
    "jacobian_law",
    "jvp",
    "law",
    "needed_nodes",
    "op_count",
    "simplify",
    "sparse_jacobian",
    "vjp",
    "vjp_entries",
]
