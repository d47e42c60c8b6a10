"""``torch.autograd`` as symgrad mirrors it: ``backward`` only."""

from ..derive.autograd import backward

__all__ = ["backward"]
