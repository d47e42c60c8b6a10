"""Random ops: the noise a dropout multiplies by in training mode, and any other draw, drawn as torch draws it.

``dropout_noise(x, p)`` is ``bernoulli(1 − p) / (1 − p)`` of x's shape: 0 or 1/(1 − p) per entry. In a formula
each entry is a symbol of its own (``noise1_0_1``), so that a law or a proof holds for every draw; its numbers,
when the draw is known (a traced model, or :func:`symgrad.torch.manual_seed`), are torch's. Emitted code draws it
with torch's generator exactly as ``F.dropout`` does on the CPU (``empty_like(x).bernoulli_(1 − p).div_(1 − p)``),
so that a seeded run gives the same numbers; its gradient is ``g · noise``, read from the forward.

>>> import symgrad as sg
>>> from symgrad.core import apply
>>> x = sg.tensor([1.0, 3.0], name="x")
>>> noise = apply("dropout_noise", x, p=0.5, key=1, drawn=Drawn([2.0, 0.0]))
>>> noise.sympy(), noise.tolist(), (x * noise).tolist()
([noise1_0, noise1_1], [2.0, 0.0], [2.0, 0.0])
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..core.errors import ValuesUnknownError
from ..core.registry import Op, register
from ..core.symbols import entry_symbols
from .rows import same_shape

_owners = itertools.count(-1000, -1)  # owners of noise symbols: distinct from every tensor's (see EntrySymbol)


class Drawn:
    """The numbers one draw gave (or None when they are not known, as at symbolic sizes), with the owner of its
    symbols; compared by identity, so that two draws are never merged, and printed alike, so that two traces of
    the same code compare equal."""

    def __init__(self, values: Any = None) -> None:
        self.values = None if values is None else np.array(values, dtype=float)  # a copy: torch may change its own
        self.owner = next(_owners)

    def __repr__(self) -> str:
        return "<drawn>"


def _meaning(like: np.ndarray, *, p: float, key: int, drawn: Drawn) -> np.ndarray:
    symbols = entry_symbols(f"noise{key}", like.shape, owner=drawn.owner)
    if drawn.values is not None and drawn.values.shape == symbols.shape:
        for symbol, value in zip(symbols.reshape(-1), drawn.values.reshape(-1)):
            symbol.drawn_value = float(value)  # its number, for the formulas that read it (gradients)
    return symbols


def _numbers(like: np.ndarray, *, p: float, key: int, drawn: Drawn) -> np.ndarray:
    if drawn.values is None or drawn.values.shape != np.shape(like):
        raise ValuesUnknownError("the numbers of a dropout's noise are known only where it was drawn")
    return drawn.values


def _torch(torch: Any, like: Any, *, p: float, key: int, drawn: Drawn) -> Any:
    """The drawn numbers where known; elsewhere (a check at other sizes) a draw from a generator seeded by key, so
    that every evaluation of the same node in one check sees the same noise."""
    if drawn.values is not None and tuple(drawn.values.shape) == tuple(like.shape):
        return torch.tensor(drawn.values, dtype=like.dtype)
    generator = torch.Generator().manual_seed(key)
    return torch.empty_like(like).bernoulli_(1 - p, generator=generator).div_(1 - p)


register(
    Op(
        name="dropout_noise",
        shape=same_shape,
        meaning=_meaning,
        torch=_torch,
        code="torch.empty_like({0}).bernoulli_({keep}).div_({keep})",
        latex=r"\operatorname{{noise}}_{{{key}}}",
        grad_fn="BernoulliBackward0",
        saves=False,
        differentiable=False,
        vjp=lambda g, out, like, **attrs: (None,),
        float64=_numbers,
        spell=lambda attrs, inputs: {"keep": repr(1 - attrs["p"])},
        cost=lambda shape, **_: 1,
        tags=frozenset({"random"}),
    )
)


# ── any other draw torch makes, by its kind: a row each, drawing in like's dtype and device ───────────────────
# kind: (torch's in-place method, its parameters) — the draw is ``empty(shape).method(*parameters)``
KINDS = {
    "normal": ("normal_", ("mean", "std")),
    "uniform": ("uniform_", ("low", "high")),
    "bernoulli": ("bernoulli_", ("p",)),
    "integers": ("random_", ("low", "high")),
    "exponential": ("exponential_", ("lambd",)),
    "geometric": ("geometric_", ("p",)),
    "cauchy": ("cauchy_", ("median", "sigma")),
    "log_normal": ("log_normal_", ("mean", "std")),
}


def _draw_meaning(*like: np.ndarray, shape: tuple, key: int, drawn: Drawn, **params: Any) -> np.ndarray:
    return _meaning(np.empty(shape, dtype=object), p=0.0, key=key, drawn=drawn)


def _draw_numbers(*like: np.ndarray, shape: tuple, key: int, drawn: Drawn, **params: Any) -> np.ndarray:
    if drawn.values is None or drawn.values.shape != tuple(shape):
        raise ValuesUnknownError("the numbers of a random draw are known only where it was drawn")
    return drawn.values


def _draw_torch(kind: str) -> Any:
    method, names = KINDS[kind]

    def draw(torch: Any, *like: Any, shape: tuple, key: int, drawn: Drawn, dtype: str = "float64", **params: Any):
        """The drawn numbers where known; elsewhere (a check at other sizes) the same draw from a generator seeded
        by key, so that every evaluation of the same node in one check sees the same numbers."""
        kind_of = like[0].dtype if like else getattr(torch, dtype)
        if drawn.values is not None and tuple(drawn.values.shape) == tuple(shape):
            return torch.tensor(drawn.values, dtype=kind_of)
        generator = torch.Generator().manual_seed(key)
        empty = torch.empty(tuple(int(d) for d in shape), dtype=kind_of)
        return getattr(empty, method)(*(params[n] for n in names), generator=generator)

    return draw


def _arguments(names: tuple[str, ...]) -> str:
    return ", ".join(f"{{{name}}}" for name in names)


for _kind, (_method, _names) in KINDS.items():
    for _like in (True, False):  # drawn like a tensor of the model (its dtype and device), or from sizes alone
        register(
            Op(
                name=f"draw_{_kind}" if _like else f"draw_{_kind}_new",
                shape=lambda *like, shape, **attrs: tuple(shape),
                meaning=_draw_meaning,
                torch=_draw_torch(_kind),
                code=(f"{{0}}.new_empty({{shape}}).{_method}({_arguments(_names)})" if _like
                      else f"torch.empty({{shape}}, dtype=torch.{{dtype}}).{_method}({_arguments(_names)})"),
                latex=rf"\operatorname{{{{{_kind}}}}}_{{{{{{key}}}}}}",
                grad_fn="none",
                saves=False,
                differentiable=False,
                vjp=lambda g, out, *like, **attrs: (None,) * len(like),
                float64=_draw_numbers,
                cost=lambda *shapes, **_: 1,
                tags=frozenset({"random", "creation"} if not _like else {"random"}),
            )
        )  # fmt: skip
