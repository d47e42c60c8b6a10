"""torch's built-in functions whose arguments come in another order than ``torch.nn.functional``'s.

symgrad's functions take ``torch.nn.functional``'s arguments. A few built-ins of the same name take theirs
otherwise: ``torch.batch_norm(input, weight, bias, running_mean, running_var, ...)`` against
``F.batch_norm(input, running_mean, running_var, weight, bias, ...)``, ``torch.softmax(x, dim, dtype)`` against
``F.softmax(x, dim, _stacklevel, dtype)``. The tracer names each argument of such a call before it follows it.

>>> args, kwargs = as_functional("batch_norm", ("x", "w", "b", "m", "v", True, 0.1, 1e-5, False), {})
>>> args, kwargs["running_mean"], kwargs["weight"], "cudnn_enabled" in kwargs
((), 'm', 'w', False)
>>> as_functional("relu", ("x",), {})
(('x',), {})
"""

from __future__ import annotations

# each built-in's parameters, in its order; None marks one symgrad has no use for (cuDNN switches)
_ORDERS: dict[str, tuple[str | None, ...]] = {
    "batch_norm": ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps", None),
    "layer_norm": ("input", "normalized_shape", "weight", "bias", "eps", None),
    "group_norm": ("input", "num_groups", "weight", "bias", "eps", None),
    "softmax": ("input", "dim", "dtype"),
    "log_softmax": ("input", "dim", "dtype"),
    "embedding": ("weight", "input", "padding_idx", "scale_grad_by_freq", "sparse"),
    "dropout": ("input", "p", "training"),
}
_RENAMED = {"train": "training", "cudnn_enabled": None, "cudnn_enable": None, "indices": "input"}


def as_functional(name: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments of a call of the built-in ``name`` as ``torch.nn.functional``'s function takes them."""
    order = _ORDERS.get(name)
    if order is None:
        return args, kwargs
    named = {key: value for key, value in zip(order, args) if key is not None}
    for key, value in kwargs.items():
        key = _RENAMED.get(key, key)
        if key is not None:
            named[key] = value
    if name == "embedding" and named.get("padding_idx") == -1:  # the built-in's "no padding row"
        named["padding_idx"] = None
    return (), named
