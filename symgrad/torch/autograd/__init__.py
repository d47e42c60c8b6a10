"""``torch.autograd`` as symgrad mirrors it: ``backward`` and ``grad`` (with ``create_graph``), and
``torch.autograd.functional`` (Jacobians, Hessians, and vector products with them).

Like the rest of :mod:`symgrad.torch`, it imports :mod:`symgrad.derive` and the layers below it only.
"""

from ...derive.autograd import backward, grad
from . import functional

__all__ = ["backward", "functional", "grad"]
