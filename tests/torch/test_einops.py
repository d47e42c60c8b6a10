"""einops through ``sg.trace``: ``rearrange``, ``reduce`` and ``repeat`` at symbolic sizes and at fixed ones, in any
order of calls (einops caches its recipes by shape: a symbolic size must never meet a recipe made for a number)."""

from __future__ import annotations

import pytest
import torch

import symgrad as sg

einops = pytest.importorskip("einops")
rearrange, reduce, repeat = einops.rearrange, einops.reduce, einops.repeat


def heads(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A multi-head split and merge, as attention code writes it."""
    h = rearrange(x @ w, "b t (h d) -> b h t d", h=2)
    pooled = reduce(h, "b h t d -> b h d", "mean")
    spread = repeat(pooled, "b h d -> b h t d", t=x.shape[1])
    return rearrange(h * spread, "b h t d -> b t (h d)").tanh().sum()


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn((3, 5, 4), generator=generator, dtype=torch.float64)
    w = torch.randn((4, 6), generator=generator, dtype=torch.float64)
    return x, w


def _gradient_matches(traced: sg.torch.tracing.Trace, x: torch.Tensor, w: torch.Tensor) -> None:
    w_ref = w.clone().requires_grad_()
    heads(x, w_ref).backward()
    (grad,) = sg.vjp([traced.output], [traced.inputs[1]])
    assert torch.allclose(torch.tensor(grad.tolist(), dtype=torch.float64), w_ref.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("order", ["symbolic first", "fixed first"])
def test_einops_traces_at_symbolic_and_fixed_sizes_in_any_order(order: str) -> None:
    x, w = _inputs()
    runs = [{"x": {0: "b", 1: "t"}}, None]
    if order == "fixed first":
        runs.reverse()
    for dynamic in runs * 2:  # again, with einops' caches warm from both
        traced = sg.trace(heads, x, w, dynamic_shapes=dynamic)
        if dynamic is None:
            assert traced.output.shape == () and traced.inputs[0].shape == (3, 5, 4)
            _gradient_matches(traced, x, w)
        else:
            assert [str(d) for d in traced.inputs[0].shape] == ["b", "t", "4"]
            proof = sg.prove(traced.output, [traced.inputs[1]], sizes=[{sg.dims("b")[0]: 2, sg.dims("t")[0]: 2}])
            assert proof.held, str(proof)


def test_a_symbolic_size_is_not_a_cache_key() -> None:
    """Code that hashes a size (a key of its own cache) is told in one line; a symbolic size is no number."""
    x, _ = _inputs()
    cache: dict = {}

    def cached(x: torch.Tensor) -> torch.Tensor:
        cache.setdefault(x.shape[0], len(cache))
        return x.sum()

    with pytest.raises(sg.SymgradError):
        sg.trace(cached, x, dynamic_shapes={"x": {0: "b"}})
    assert sg.trace(cached, x).output.shape == ()
