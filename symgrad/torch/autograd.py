"""``torch.autograd`` as symgrad mirrors it: ``backward`` only."""

from ..autograd import backward

__all__ = ["backward"]
