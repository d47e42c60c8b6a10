"""``torch.nn`` as symgrad mirrors it: ``functional`` (activations, layers, losses) on symbolic tensors.

Like the rest of :mod:`symgrad.torch`, it imports :mod:`symgrad.derive` and the layers below it only.
"""

from . import functional

__all__ = ["functional"]
