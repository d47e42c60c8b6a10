"""``torch.nn``'s module classes on symbolic tensors: ``Module``, containers, layers, activations and losses.

Each layer keeps its parameters as named leaves (see :mod:`.module`) and computes with
:mod:`symgrad.torch.nn.functional`; its initial parameters are torch's (:mod:`.initial`, the one module here
that imports the real torch, when a layer is built). It imports :mod:`symgrad.torch` and the layers below it.
"""

from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)  # fmt: skip
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)  # fmt: skip
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from .parameter import Buffer, Parameter
from .pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .rnn import GRUCell, LSTMCell, RNNCell
from .sparse import Embedding

__all__ = [
    "CELU", "ELU", "GELU", "GLU", "SELU", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AlphaDropout", "AvgPool1d",
    "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Buffer", "Conv1d", "Conv2d",
    "CrossEntropyLoss", "Dropout", "Dropout1d", "Dropout2d", "Embedding", "Flatten", "GRUCell", "GroupNorm",
    "Hardsigmoid", "Hardswish", "Hardtanh", "HuberLoss", "Identity", "KLDivLoss", "L1Loss",
    "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid", "LogSoftmax", "MSELoss", "MaxPool1d", "MaxPool2d",
    "Mish", "Module", "ModuleDict", "ModuleList", "MultiheadAttention", "NLLLoss", "PReLU", "Parameter", "RMSNorm",
    "RNNCell", "ReLU", "ReLU6", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax", "Softmin", "Softplus",
    "Softsign", "Tanh", "Tanhshrink", "Threshold", "Unflatten",
]  # fmt: skip
