"""A torch-compatible namespace: ``import symgrad.torch as torch`` runs torch code symbolically.

The functions take and return symbolic tensors, with torch's signatures, defaults and error
messages; each is an op of the table or a composite of ops, so its gradient follows from the
ops' rules. ``torch.autograd.backward`` and ``Tensor.backward`` mirror torch's semantics. This
package imports :mod:`symgrad.derive` and the layers below it, never the real torch.

>>> import symgrad.torch as torch
>>> w = torch.tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = torch.tensor([[1.0], [1.0]], name="x")
>>> loss = torch.mm(w, x)
>>> loss.backward()
>>> w.grad.tolist()
[[1.0, 1.0]]
"""

from __future__ import annotations

import math as _math
import sys as _sys

from ..core.constructors import tensor
from ..core.numbers import compute_approximations_with
from ..core.tensor import Tensor
from ..derive.autograd import backward
from . import aliases, autograd, creation, func, linalg, nn, pointwise, products, recurrent, reductions, shape, special
from .creation import *  # noqa: F403 - each family module lists its functions in __all__
from .linalg import slogdet
from .pointwise import *  # noqa: F403
from .products import *  # noqa: F403
from .recurrent import *  # noqa: F403
from .reductions import *  # noqa: F403
from .shape import *  # noqa: F403
from .torch_numbers import TORCH_NUMBERS

float32 = float = "float32"
float64 = double = "float64"
int64 = long = "int64"
inf = _math.inf

__all__ = [
    "Tensor", "aliases", "autograd", "backward", "double", "float", "float32", "float64", "func", "inf", "int64",
    "linalg", "long", "nn", "slogdet", "special", "tensor",
]  # fmt: skip
__all__ += creation.__all__ + pointwise.__all__ + products.__all__ + recurrent.__all__ + reductions.__all__
__all__ += shape.__all__
__all__ += aliases.install(_sys.modules[__name__])
compute_approximations_with(TORCH_NUMBERS)  # torch's Bessel, gamma and error functions define their values
