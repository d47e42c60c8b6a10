"""``torch.nn.functional``: the activations symgrad knows."""

from ...tensor import Tensor, apply


def relu(input: Tensor) -> Tensor:
    return apply("relu", input)


def sigmoid(input: Tensor) -> Tensor:
    return apply("sigmoid", input)


def tanh(input: Tensor) -> Tensor:
    return apply("tanh", input)


__all__ = ["relu", "sigmoid", "tanh"]
