"""``torch.nn.functional``: activations, normalisations, losses, convolutions, poolings and attention.

Each function is an op of the table or a composite of ops, so its gradient comes from the ops'
rules and matches torch's, including at kinks and ties (see each function's note). The functions
live in one module per family (:mod:`.activations`, :mod:`.normalization`, :mod:`.losses`,
:mod:`.layers`, :mod:`.convolution`, :mod:`.pooling`); this module gathers them under torch's name.
Class targets (``cross_entropy``, ``nll_loss``, ``one_hot``) enter the formulas as integer constants.

>>> import symgrad.torch as torch
>>> F = torch.nn.functional
>>> z = torch.tensor([[0.0, 0.0]], requires_grad=True, name="z")
>>> loss = F.cross_entropy(z, torch.tensor([1]))
>>> round(loss.item(), 6)
0.693147
>>> loss.backward()
>>> z.grad.tolist()
[[0.5, -0.5]]
"""

from __future__ import annotations

from ..shape import pad
from .activations import (
    celu,
    dropout,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softsign,
    tanh,
    threshold,
)
from .convolution import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from .layers import bilinear, embedding, embedding_bag, linear, scaled_dot_product_attention
from .losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    gaussian_nll_loss,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    one_hot,
    smooth_l1_loss,
)
from .normalization import batch_norm, cosine_similarity, group_norm, layer_norm, normalize, rms_norm
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_similarity",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "embedding_bag",
    "gaussian_nll_loss",
    "gelu",
    "group_norm",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "mish",
    "mse_loss",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "relu",
    "relu6",
    "rms_norm",
    "scaled_dot_product_attention",
    "selu",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "tanh",
    "threshold",
]
