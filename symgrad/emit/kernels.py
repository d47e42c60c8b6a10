"""Graph rewrites that let emitted code run torch's fused loss kernels, applied to the law before printing.

The law of softmax cross-entropy reads ``(softmax(z) - one_hot(y)) * s`` (in torch's order,
``where(one_hot(y) == 1, -s, 0) + softmax(z) * s``), which a printer would spell as four or five kernel calls.
torch's own ``cross_entropy`` keeps ``log_softmax(z)`` from its forward and runs two backward kernels on it.
Emitted code does the same: the forward computes ``log_softmax(z)`` and ``nll_loss`` of it (what
``cross_entropy`` computes inside, so the value is the same), and the backward reads the saved
log-probabilities (the ``cross_entropy_grad`` row).

>>> import symgrad as sg
>>> import symgrad.torch as torch
>>> from symgrad.derive.reverse import law
>>> m, n, c = sg.dims("m n c")
>>> X, W = sg.symbols("X", (m, n)), sg.symbols("W", (n, c))
>>> y, g = sg.symbols("y", (m,), dtype="int64"), sg.symbols("g", ())
>>> out = torch.nn.functional.cross_entropy(X @ W, y)
>>> forward, (grad_W,) = split_cross_entropy(out, law(out, [W], g, exact=True))
>>> forward.op.name, grad_W.inputs[1].op.name
('nll_loss', 'cross_entropy_grad')
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence

from ..core.graph import topological, uniform_constant
from ..core.tensor import Tensor, apply, constant, with_inputs
from ..derive.patterns import cross_entropy_gradient


def joined_cross_entropy(output: Tensor) -> Tensor:
    """``output`` with each ``nll_loss(log_softmax(z, dim=1), y)`` whose log-softmax nothing else reads written as
    ``cross_entropy(z, y)``, which torch defines as exactly that, so that its gradient takes the same kernels
    (see :func:`split_cross_entropy`) instead of a dense one-hot and a recomputed softmax.

    >>> import symgrad as sg
    >>> import symgrad.torch as torch
    >>> z, y = sg.symbols("z", (4, 3)), sg.symbols("y", (4,), dtype="int64")
    >>> F = torch.nn.functional
    >>> joined_cross_entropy(F.nll_loss(F.log_softmax(z, dim=1), y, reduction="sum")).name
    'torch.nn.functional.cross_entropy(z, y, reduction="sum")'
    """
    nodes = topological(output)
    readers = Counter(id(i) for n in nodes if n.op is not None for i in n.inputs)
    replacements: dict[int, Tensor] = {}
    for node in nodes:
        if node.op is None or node.op.name != "nll_loss":
            continue
        log_probabilities, y = node.inputs
        if log_probabilities.op is None or log_probabilities.op.name != "log_softmax":
            continue
        (z,) = log_probabilities.inputs
        if readers[id(log_probabilities)] == 1 and len(z.shape) == 2 and log_probabilities.attrs["dim"] % 2 == 1:
            replacements[id(node)] = apply("cross_entropy", z, y, reduction=node.attrs["reduction"])
    return _rebuild(output, replacements, {}) if replacements else output


def split_cross_entropy(output: Tensor, laws: Sequence[Tensor]) -> tuple[Tensor, list[Tensor]]:
    """``output`` and ``laws`` with each ``cross_entropy(z, y)`` whose gradient the laws read as
    ``(softmax(z) - one_hot(y)) * s`` (``s`` a scalar, see :func:`~symgrad.derive.patterns.cross_entropy_gradient`)
    split into ``nll_loss(log_softmax(z), y)`` and
    ``cross_entropy_grad(log_softmax(z), y, s, 1)``, or ``(…, g, nll_total_weight(…))`` when ``s`` is ``g / m``
    over the m rows of z; unchanged when there is none."""
    losses = [n for n in topological(output) if n.op is not None and n.op.name == "cross_entropy"]
    if not losses:
        return output, list(laws)
    replacements: dict[int, Tensor] = {}
    log_probabilities: dict[int, Tensor] = {}
    for root in laws:
        for node in topological(root):
            match = cross_entropy_gradient(node)
            if match is None:
                continue
            z, y, scale = match
            loss = next((c for c in losses if c.inputs[0] is z and c.inputs[1] is y), None)
            if loss is None:
                continue
            if id(loss) not in log_probabilities:
                log_probabilities[id(loss)] = apply("log_softmax", z, dim=1)
                replacements[id(loss)] = apply(
                    "nll_loss", log_probabilities[id(loss)], y, reduction=loss.attrs["reduction"]
                )
            lp = log_probabilities[id(loss)]
            scale, total = _scale_and_total(scale, lp, y) if loss.attrs["reduction"] == "mean" else (scale, _one(lp))
            replacements[id(node)] = apply("cross_entropy_grad", lp, y, scale, total)
    if not replacements:
        return output, list(laws)
    rebuilt: dict[int, Tensor] = {}
    return _rebuild(output, replacements, rebuilt), [_rebuild(g, replacements, rebuilt) for g in laws]


def masks_of_relu_outputs(output: Tensor, laws: Sequence[Tensor]) -> list[Tensor]:
    """``laws`` with relu's mask ``z <= 0`` read as ``relu(z) <= 0`` where the forward computes ``relu(z)``: the
    same mask (a nan stays a nan), and the tensor autograd's relu backward reads, so that the backward saves
    relu's output, which the next layer saves anyway, and not z."""
    relus = {id(n.inputs[0]): n for n in topological(output) if n.op is not None and n.op.name == "relu"}

    def on_relu_output(node: Tensor) -> Tensor | None:
        if node.op is None or node.op.name != "le" or uniform_constant(node.inputs[1]) != 0:
            return None
        if id(node.inputs[0]) not in relus or node.inputs[1].shape:
            return None
        return with_inputs(node, [relus[id(node.inputs[0])], node.inputs[1]])

    return _rewritten(laws, on_relu_output) if relus else list(laws)


def tiled_slice_gradients(laws: Sequence[Tensor]) -> list[Tensor]:
    """``laws`` with each sum of slices' gradients that tile one dim (the gradient of ``q, k, v =
    qkv.split(n, dim=2)``) written as ``cat`` of the slices' gradients in order, as autograd's split backward
    computes it: one copy, where each gradient scattered into zeros and the sum take a pass each."""
    return _rewritten(
        laws, lambda node: _joined_slices(node) if node.op is not None and node.op.name == "add" else None
    )


def _rewritten(laws: Sequence[Tensor], replacement: Callable[[Tensor], Tensor | None]) -> list[Tensor]:
    """``laws`` with each node for which ``replacement`` gives a tensor swapped for it (the others kept)."""
    replacements: dict[int, Tensor] = {}
    for root in laws:
        for node in topological(root):
            if id(node) not in replacements:
                found = replacement(node)
                if found is not None:
                    replacements[id(node)] = found
    rebuilt: dict[int, Tensor] = {}
    return [_rebuild(g, replacements, rebuilt) for g in laws] if replacements else list(laws)


def _joined_slices(total: Tensor) -> Tensor | None:
    """``cat`` of the slices' gradients when ``total`` is a sum of them that tiles one dim, else None."""
    terms, stack = [], [total]
    while stack:
        node = stack.pop()
        if node.op is not None and node.op.name == "add":
            stack.extend(node.inputs)
        elif node.op is not None and node.op.name == "index_backward":
            terms.append(node)
        else:
            return None
    shape = tuple(total.shape)
    if len(terms) < 2 or any(tuple(n.attrs["shape"]) != shape or n.dtype != total.dtype for n in terms):
        return None
    spans = []
    for node in terms:
        index = node.attrs["index"]
        if len(index) > len(shape) or not all(isinstance(i, slice) for i in index):
            return None
        cut = [d for d, i in enumerate(index) if i != slice(None)]
        if len(cut) != 1 or index[cut[0]].step not in (None, 1) or not isinstance(shape[cut[0]], int):
            return None
        start, stop, _ = index[cut[0]].indices(shape[cut[0]])
        if tuple(node.inputs[0].shape) != (*shape[: cut[0]], stop - start, *shape[cut[0] + 1 :]):
            return None
        spans.append((cut[0], start, stop, node.inputs[0]))
    spans.sort(key=lambda span: span[1])
    tiled = all(a[2] == b[1] for a, b in itertools.pairwise(spans))
    if len({span[0] for span in spans}) != 1 or not tiled or spans[0][1] != 0 or spans[-1][2] != shape[spans[0][0]]:
        return None
    return apply("cat", *(span[3] for span in spans), dim=spans[0][0])


def _scale_and_total(scale: Tensor, lp: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """``(s, nll_total_weight(lp, y))`` for a scale ``s / m`` with m the number of rows (a mean's), whose division
    torch's NLL kernel does itself, by the total weight the forward's kernel returns; else ``(scale, 1)``."""
    if scale.op is not None and scale.op.name == "div" and uniform_constant(scale.inputs[1]) == lp.shape[0]:
        return scale.inputs[0], apply("nll_total_weight", lp, y)
    return scale, _one(lp)


def _one(lp: Tensor) -> Tensor:
    return constant(1, dtype=lp.dtype, python_scalar=True)


def _rebuild(root: Tensor, replacements: dict[int, Tensor], rebuilt: dict[int, Tensor]) -> Tensor:
    """``root`` with the nodes in ``replacements`` swapped in, and within each replacement too (one built from the
    old nodes, such as a layer's joined slices that read the next layer's gradient, would otherwise keep a copy of
    everything above it); unchanged nodes keep their identity (the forward and the backward share them)."""
    for node in topological(root):
        if id(node) in rebuilt:
            continue
        if id(node) in replacements:
            rebuilt[id(node)] = node  # a replacement that reads the node itself reads it as it is
            rebuilt[id(node)] = _rebuild(replacements[id(node)], replacements, rebuilt)
        elif node.op is None:
            rebuilt[id(node)] = node
        else:
            rebuilt[id(node)] = with_inputs(node, [rebuilt[id(i)] for i in node.inputs])
    return rebuilt[id(root)]
