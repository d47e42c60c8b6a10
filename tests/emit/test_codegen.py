"""Emitted modules: they match torch.autograd and pass gradcheck, read as code we'd sign, and are deterministic."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch

import symgrad as sg
from symgrad.cli import catalogue
from symgrad.core.errors import SymgradError
from symgrad.emit import check_module, codegen, compile_module

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "generated"


@pytest.mark.parametrize("item", catalogue.CODE_ITEMS, ids=lambda item: item.stem)
def test_catalogue_module_matches_autograd_and_passes_gradcheck(item):
    output, inputs, wrt = item.graph()
    module = compile_module(output, wrt, inputs=inputs, style="autograd_function", name=item.class_name)
    for sizes_seed in (0, 1):
        result = check_module(module, output, wrt, inputs, seed=sizes_seed)
        assert result.ok, str(result)
        assert result.gradcheck is True


def test_generated_code_passes_ruff():
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.skip("ruff is not installed")
    files = sorted(str(p) for p in GENERATED.glob("*.py"))
    assert files
    checked = subprocess.run([ruff, "check", *files], capture_output=True, text=True, cwd=ROOT)
    assert checked.returncode == 0, checked.stdout
    formatted = subprocess.run([ruff, "format", "--check", *files], capture_output=True, text=True, cwd=ROOT)
    assert formatted.returncode == 0, formatted.stdout


def test_generated_code_imports_only_torch_and_the_standard_library():
    for path in GENERATED.glob("*.py"):
        imports = [line for line in path.read_text().splitlines() if line.startswith(("import ", "from "))]
        assert all(line in ("import torch", "import math") for line in imports), (path.name, imports)


def test_emitted_code_runs_in_float32_too():
    k, n, m = sg.dims("k n m")
    W, X, b = sg.symbols("W", (k, n)), sg.symbols("X", (n, m)), sg.symbols("b", (k, 1))
    out = (W @ X + b).tanh()
    module = compile_module(out, [W, b], inputs=[W, X, b], style="autograd_function", name="Layer")
    args = [torch.randn(3, 4), torch.randn(4, 5), torch.randn(3, 1)]
    grad = torch.randn(3, 5)
    leaves = [a.clone().requires_grad_(True) for a in args]
    torch.tanh(leaves[0] @ leaves[1] + leaves[2]).backward(grad)
    grad_w, grad_b = module.vjp(*args, grad)
    assert grad_w.dtype == torch.float32
    torch.testing.assert_close(grad_w, leaves[0].grad)
    torch.testing.assert_close(grad_b, leaves[2].grad)


def test_concrete_shapes_are_enforced():
    W, X = sg.symbols("W", (2, 3)), sg.symbols("X", (3, 4))
    module = compile_module(W @ X, [W], inputs=[W, X], name="Fixed")
    with pytest.raises(ValueError, match="expected 2×3"):
        module.forward(torch.randn(3, 3), torch.randn(3, 4))


def test_symbolic_shapes_are_checked_against_each_other():
    k, n, m = sg.dims("k n m")
    W, X = sg.symbols("W", (k, n)), sg.symbols("X", (n, m))
    module = compile_module(W @ X, [W], inputs=[W, X], name="Free")
    assert module.forward(torch.ones(2, 3), torch.ones(3, 7)).shape == (2, 7)
    with pytest.raises(ValueError, match="their sizes n differ"):
        module.forward(torch.ones(2, 3), torch.ones(4, 7))


@pytest.mark.parametrize("name", ["class", "torch", "grad_output", "x-y", "_hidden", "1x"])
def test_a_name_code_cannot_use_gets_a_code_name_the_docstring_states(name):
    source = _emit_with_input(name)
    compile(source, "emitted", "exec")
    assert f"the input {name} is " in source


def _emit_with_input(name: str) -> str:
    from symgrad.core import Tensor

    leaf = Tensor(shape=(2,), name="a")
    leaf._name = name  # bypass the tensor's own check: codegen must refuse on its own
    return codegen(leaf * 2, [leaf], inputs=[leaf], name="Bad")


def test_module_name_must_be_camel_case():
    x = sg.symbols("x", (2,))
    with pytest.raises(SymgradError):
        codegen(x * 2, [x], inputs=[x], name="bad name; import os")


def test_autograd_function_saves_only_what_backward_reads():
    source = (GENERATED / "tanh_layer.py").read_text()
    # X and the output for the formula; W and b only to recompute the output under create_graph=True
    assert "ctx.save_for_backward(W, X, b, output)" in source
    assert "torch.ops.aten.tanh_backward(grad_output, output)" in source  # torch's fused kernel for g * (1 - y**2)
    assert "if torch.is_grad_enabled():" in source


def _sample_arguments(output, inputs, wrt, seed: int):
    """Random float64 arguments for the emitted module at sizes 3, 4, …, the wrt inputs requiring grad."""
    from symgrad.core.graph import dims_of
    from symgrad.verify import instantiate

    sizes = dict(zip(dims_of([output, *inputs]), range(3, 99)))
    made = instantiate([output, *inputs], sizes)
    g = torch.Generator().manual_seed(seed)
    arguments = []
    for t in inputs:
        leaf = made[id(t)]
        if leaf.dtype.startswith("int"):
            arguments.append(torch.tensor([int(v) for v in leaf.entries().reshape(-1)]).reshape(leaf.shape))
        else:
            value = torch.rand(leaf.shape, dtype=torch.float64, generator=g) * 1.2 - 0.6
            arguments.append(value.requires_grad_(any(t is x for x in wrt)))
    return arguments


@pytest.mark.parametrize("item", catalogue.CODE_ITEMS, ids=lambda item: item.stem)
def test_catalogue_function_is_right_under_double_backward(item):
    """Second derivatives through every generated autograd.Function equal plain autograd's (gradgradcheck)."""
    output, inputs, wrt = item.graph()
    module = compile_module(output, wrt, inputs=inputs, style="autograd_function", name=item.class_name)
    arguments = _sample_arguments(output, inputs, wrt, seed=0)
    assert torch.autograd.gradgradcheck(module.apply, arguments, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func's import
@pytest.mark.parametrize("item", catalogue.CODE_ITEMS, ids=lambda item: item.stem)
def test_torch_func_hessian_works_through_every_catalogue_function(item):
    """torch.func.hessian (forward mode over reverse) needs the Function's jvp and a differentiable backward:
    through the emitted Function it equals the Hessian of the plain forward, wrt the first wrt input."""
    output, inputs, wrt = item.graph()
    module = compile_module(output, wrt, inputs=inputs, style="autograd_function", name=item.class_name)
    arguments = [a.detach() for a in _sample_arguments(output, inputs, wrt, seed=1)]
    position = next(i for i, t in enumerate(inputs) if any(t is x for x in wrt))

    def through(function):
        def scalar(a):
            return function(*arguments[:position], a, *arguments[position + 1 :]).sum()

        return scalar

    ours = torch.func.hessian(through(module.apply))(arguments[position])
    reference = torch.autograd.functional.hessian(through(module.forward), arguments[position])
    torch.testing.assert_close(ours, reference, rtol=1e-10, atol=1e-10)


def test_apply_binds_no_signature_per_call_outside_torch_func():
    """torch.autograd.Function.apply runs inspect.signature(forward).bind(...) on every call of a Function with
    setup_context; outside torch.func transforms apply(...) runs the forward(ctx, ...) variant, which it skips."""
    item = next(item for item in catalogue.CODE_ITEMS if item.stem == "two_layer_mlp_mse")
    output, inputs, wrt = item.graph()
    module = compile_module(output, wrt, inputs=inputs, style="autograd_function", name=item.class_name)
    arguments = _sample_arguments(output, inputs, wrt, seed=3)
    with mock.patch("inspect.signature", side_effect=AssertionError("inspect.signature called per call")):
        out = module.apply(*arguments)
        out.backward()
    assert type(out.grad_fn).__name__ == "_EagerTwoLayerMlpMseFunctionBackward"
    assert all(a.grad is not None for a in arguments if a.requires_grad)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # forward_ad's import
def test_forward_mode_ad_through_apply_outside_torch_func():
    """torch.autograd.forward_ad (dual tensors, no torch.func transform) reaches the jvp through apply's fast
    variant, which returns no intermediates: the same tangent as torch's forward mode through the plain forward."""
    import torch.autograd.forward_ad as forward_ad

    item = next(item for item in catalogue.CODE_ITEMS if item.stem == "logistic_regression")
    output, inputs, wrt = item.graph()
    module = compile_module(output, wrt, inputs=inputs, style="autograd_function", name=item.class_name)
    X, w, y = (a.detach() for a in _sample_arguments(output, inputs, wrt, seed=4))
    tangent = torch.randn(w.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    with forward_ad.dual_level():
        ours = forward_ad.unpack_dual(module.apply(X, forward_ad.make_dual(w, tangent), y)).tangent
        expected = forward_ad.unpack_dual(module.forward(X, forward_ad.make_dual(w, tangent), y)).tangent
    assert ours is not None
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)


def test_apply_takes_a_tensor_leaked_out_of_a_finished_torch_func_transform():
    """torch's own Function.apply unwraps such "dead" functorch wrappers before its C-level apply, and so does
    apply's fast path: gradients flow back through the leaked tensor to the leaf it was made of."""
    item = next(item for item in catalogue.CODE_ITEMS if item.stem == "tanh_layer")
    output, inputs, wrt = item.graph()
    module = compile_module(output, wrt, inputs=inputs, style="autograd_function", name=item.class_name)
    W, X, b = (a.detach() for a in _sample_arguments(output, inputs, wrt, seed=5))
    scale = torch.tensor(1.5, dtype=W.dtype, requires_grad=True)
    leaked = []

    def keep(a):
        scaled = a * scale
        leaked.append(scaled)
        return (scaled * scaled).sum()

    torch.func.grad(keep)(W)
    assert torch._C._functorch.is_functorch_wrapped_tensor(leaked[0])
    ours = module.apply(leaked[0], X, b)
    ours.sum().backward()
    reference = scale.detach().clone().requires_grad_()
    torch.tanh((W * reference) @ X + b).sum().backward()
    torch.testing.assert_close(scale.grad, reference.grad, rtol=1e-12, atol=1e-12)


# Dynamo itself instantiates the Function class while tracing it (torch 2.13, for any autograd.Function), which
# torch deprecates with a warning; the emitted code never does.
@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
def test_emitted_function_compiles_with_fullgraph_and_matches_autograd():
    """torch.compile(apply, fullgraph=True) traces the emitted Function (apply picks the variant without the jvp
    Dynamo refuses) forward and backward in one graph each, and gives autograd's values in float64. The
    aot_eager backend runs Dynamo and AOTAutograd without inductor's C++ build, so the test stays quick."""
    item = next(item for item in catalogue.CODE_ITEMS if item.stem == "two_layer_mlp_mse")
    output, inputs, wrt = item.graph()
    module = compile_module(output, wrt, inputs=inputs, style="autograd_function", name=item.class_name)
    try:
        compiled = torch.compile(module.apply, fullgraph=True, backend="aot_eager")
    except RuntimeError as error:  # Dynamo does not run on every Python version
        pytest.skip(f"torch.compile is unavailable here: {error}")
    ours = _sample_arguments(output, inputs, wrt, seed=2)
    theirs = [a.detach().clone().requires_grad_(a.requires_grad) for a in ours]
    out = compiled(*ours)
    expected = module.forward(*theirs)  # plain torch ops: autograd differentiates them itself
    out.backward()
    expected.backward()
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    for a, b in zip(ours, theirs):
        if b.requires_grad:
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("dims", "spelled"), [((1, 2), ""), ((0, 2), ", dim1=0, dim2=2")])
def test_a_diagonals_gradient_is_torch_diag_embed_where_it_is_one(dims, spelled):
    """aten's diagonal_backward and torch.diag_embed agree for offset 0 on square planes: the module prints the
    public name, and its gradient is torch's."""
    A = sg.symbols("A", (3, 4, 4) if dims == (1, 2) else (4, 3, 4), requires_grad=True)
    out = (A.diagonal(dim1=dims[0], dim2=dims[1]) ** 2).sum()
    module = sg.compile(out, [A], inputs=[A], name="Diagonal")
    assert f"torch.diag_embed(2 * grad_output * t_1{spelled})" in module.__symgrad_source__  # (1, 2): the last two
    a = torch.randn(*A.shape, dtype=torch.float64, requires_grad=True)
    (a.diagonal(dim1=dims[0], dim2=dims[1]) ** 2).sum().backward()
    (ours,) = module.vjp(a.detach(), torch.tensor(1.0, dtype=torch.float64))
    assert torch.equal(ours, a.grad)


def test_a_product_along_an_empty_dim_has_an_empty_gradient_in_emitted_code():
    """x.prod(1) of a (m, 0) tensor is ones; its gradient is empty, where slicing one entry off the empty dim would
    raise."""
    x = torch.randn(3, 0, dtype=torch.float64, requires_grad=True)
    traced = sg.trace(lambda x: (x.prod(1) * torch.arange(3.0, dtype=torch.float64)[: x.shape[0]]).sum(), x)
    module = sg.compile(traced, name="EmptyProduct")
    (ours,) = module.vjp(x.detach(), torch.tensor(1.0, dtype=torch.float64))
    assert ours.shape == (3, 0)
