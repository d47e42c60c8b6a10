"""``torch.nn``: only ``functional`` is mirrored."""

from . import functional

__all__ = ["functional"]
