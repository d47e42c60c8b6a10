"""``torch.autograd`` as symgrad mirrors it: ``backward`` and ``grad`` (with ``create_graph``)."""

from ..derive.autograd import backward, grad

__all__ = ["backward", "grad"]
