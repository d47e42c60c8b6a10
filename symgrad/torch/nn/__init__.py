"""``torch.nn`` as symgrad mirrors it: ``functional`` (activations, layers, losses) and the module classes
(``Module``, ``Linear``, ``Sequential``, …, see :mod:`.modules`) on symbolic tensors.

Like the rest of :mod:`symgrad.torch`, it imports :mod:`symgrad.derive` and the layers below it only (and the
real torch when a layer draws its initial parameters).
"""

from . import functional, modules
from .modules import *  # noqa: F403 - the module classes, listed in modules.__all__

__all__ = ["functional", "modules", *modules.__all__]
