"""An op's attributes as they appear in its code and LaTeX templates.

What every op of a kind shares is here (an index as Python writes it, the dims of a
reduction); what one op spells its own way comes from its row's ``spell``.

>>> from symgrad.core.registry import Op
>>> op = Op("sum", None, None, None, "{0}.sum({reduce_args})", "", "SumBackward1")
>>> describe(op, {"dim": (1,), "keepdim": True})["reduce_args"]
'dim=1, keepdim=True'
"""

from __future__ import annotations

from .indexing import format_index
from .registry import Op


def sum_latex(dim: tuple, keepdim: bool, shape: tuple | None) -> tuple[str, str]:
    """A sum as a paper writes it: row sums of a matrix are ``X 1``, column sums ``1ᵀ X``."""
    if shape is not None and len(shape) == 2 and keepdim and len(dim) == 1:
        return ("", r" \mathbf{1}") if dim[0] in (1, -1) else (r"\mathbf{1}^{\top} ", "")
    if shape is not None and len(dim) == len(shape):
        return r"\textstyle\sum ", ""
    return r"\textstyle\sum_{\mathrm{dim}\," + ",".join(map(str, dim)) + "} ", ""


def describe(op: Op, attrs: dict, inputs: tuple = ()) -> dict:
    """Attributes as they appear in the code and LaTeX templates."""
    out = dict(attrs)
    if "index" in attrs:
        out["index_text"] = format_index(attrs["index"])
    if isinstance(attrs.get("shape"), tuple):
        out["shape_args"] = ", ".join(str(d) for d in attrs["shape"]) or "()"  # x.reshape(()) for a 0-d result
    if "keepdim" in attrs and isinstance(attrs.get("dim"), tuple):
        dim, keepdim = attrs["dim"], attrs["keepdim"]
        every = bool(inputs) and len(dim) == len(inputs[0].shape)
        args = [] if every and not keepdim else [f"dim={dim[0] if len(dim) == 1 else dim}"]
        out["reduce_args"] = ", ".join(args + (["keepdim=True"] if keepdim else []))
        out["reduce_kwargs"] = ", " + out["reduce_args"] if out["reduce_args"] else ""
        out["dims_text"] = "" if every else ",".join(map(str, dim))
        out["sum_before"], out["sum_after"] = sum_latex(dim, keepdim, inputs[0].shape if inputs else None)
    if op.spell is not None:
        out.update(op.spell(attrs, inputs))
    return out
