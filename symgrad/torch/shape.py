"""Shape and layout: transpose, permute, reshape, unsqueeze, flatten, flip."""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return input.transpose(dim0, dim1)


def t(input: Tensor) -> Tensor:
    return input.t()


def permute(input: Tensor, dims: Any) -> Tensor:
    return input.permute(dims)


def reshape(input: Tensor, shape: Any) -> Tensor:
    return input.reshape(shape)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return input.unsqueeze(dim)


def flatten(input: Tensor) -> Tensor:
    return input.flatten()


def flip(input: Tensor, dims: Any) -> Tensor:
    return input.flip(dims)


__all__ = ["flatten", "flip", "permute", "reshape", "t", "transpose", "unsqueeze"]
