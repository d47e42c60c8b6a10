"""Emit gradient code: a torch module with ``forward``, ``vjp`` and a ``torch.autograd.Function``.

The gradient is the law from :mod:`symgrad.derive.reverse`, printed statement by
statement; nodes used twice are computed once, and forward results the
backward needs (such as ``tanh(W @ X + b)``) are saved rather than recomputed.

>>> import symgrad as sg
>>> k, n, m = sg.dims("k n m")
>>> W, X = sg.symbols("W", (k, n)), sg.symbols("X", (n, m))
>>> source = codegen(W @ X, [W], inputs=[W, X], name="Linear")
>>> "grad_W = grad_output @ X.T" in source
True
"""

from __future__ import annotations

import ast
import dataclasses
import keyword
import re
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import sympy

from ..core.constructors import symbols_like
from ..core.dims import format_shape
from ..core.dtypes import is_floating
from ..core.errors import SymgradError, WorkBudgetError
from ..core.graph import dims_of, topological, topological_all, uniform_constant
from ..core.listing import listing
from ..core.printers import LatexPrinter, size_source, tuple_text
from ..core.tensor import Tensor, apply
from ..derive.forward import jvp
from ..derive.reverse import law
from ..derive.simplify import simplify
from ..torch.trace_effects import BatchNormUpdate
from ..torch.trace_runs import flat, same_graphs
from ..torch.tracing import Trace
from ..version import __version__
from .buffer_updates import buffer_statements, folded_update, running_fields
from .code_names import code_names, renamed
from .code_text import (
    CodePrinter,
    check_class_name,
    docstring_safe,
    load_source,
    shape_tuple,
    wrapped,
)
from .curvature_code import STYLES, curvature_codegen
from .formatting import formatted
from .kernels import joined_cross_entropy, masks_of_relu_outputs, split_cross_entropy, tiled_slice_gradients
from .layout import (
    DRAWS,
    Plan,
    dims_for,
    draws,
    function_saved_inputs,
    gradients_by_input,
    guarded_backward,
    is_draw,
    layout,
    needed_forward,
    read,
    step_arguments,
    step_grads,
    unpack_targets,
    unpacked,
)
from .modes import drop_in_arguments, merged, renamed_names
from .outlining import outlined
from .recompute import remade
from .runtime_dtypes import drifts
from .shape_checks import dim_lines, message_literal, shape_checks, shape_table
from .statements import count_uses, fit_statement, name_statements, needs_name, tuple_call, tuple_labels
from .templates import code_environment


def plan(
    output: Tensor,
    wrt: Sequence[Tensor],
    inputs: Sequence[Tensor],
    guards: Sequence = (),
    updates: Sequence = (),
    buffer_names: Mapping[str, str] | None = None,
) -> Plan:
    """Decide which nodes get names, which forward results are saved, and print every statement; ``guards``
    and ``updates`` are a trace's (see :class:`symgrad.torch.tracing.Trace`), ``buffer_names`` the input names
    of the model's buffers by their paths."""
    names = [t.name for t in inputs]
    sizes = [str(d) for d in dims_of([output, *inputs])]
    clash = code_names(inputs, dims_of([output, *inputs]))
    if clash.inputs or clash.sizes:  # codegen renames them first
        raise SymgradError(f"plan() takes names its code can use, which codegen() picks: {clash.note()}")
    missing = [leaf for leaf in output.leaves().values() if not any(leaf is t for t in inputs)]
    if missing:
        raise SymgradError(f"the expression uses {missing[0].name!r}, which is not among the inputs")
    for x in wrt:
        if not any(x is t for t in inputs):
            raise SymgradError(f"wrt names {x.name!r}, which is not an input")
    v = symbols_like(output, "grad_output", distinct=True)
    expression = output  # what the docstring and forward mode describe; ``output`` is what the code computes
    output = joined_cross_entropy(output)
    derived = list(law([output], list(wrt), [v], simplified=False))  # one reverse pass, simplified two ways:
    # for the code: torch's values at infinities and nans too; the forward is rebuilt with the laws, so that a law
    # reads the forward's own nodes (hash-consing may merge equal constants under them, which rebuilds them)
    *laws, output = simplify([*derived, output], context=[output], exact=True)
    readable = simplify(derived, context=[output])  # for the docstring: the law as a person writes it
    output, laws = split_cross_entropy(output, laws)
    laws = tiled_slice_gradients(masks_of_relu_outputs(output, laws))
    law_nodes = {id(node): node for node in topological_all(laws)}
    forward_nodes, groups = _with_companions(
        {id(n): n for n in topological(output)}, [*topological(output), *law_nodes.values()]
    )
    companions = {id(c) for group in groups.values() for c in group.values()}
    uses = count_uses([output, *laws])
    frontier = set()  # forward values the backward reads
    for key, node in law_nodes.items():
        if key in forward_nodes:
            continue
        frontier |= {id(part) for part in node.inputs if id(part) in forward_nodes}
    frontier |= {id(g) for g in laws if id(g) in forward_nodes}
    frontier |= {key for key, node in forward_nodes.items() if is_draw(node)}  # noise is saved, never drawn again
    # a one-hot of the targets and what it is made from: the backward makes them again from the targets
    again = remade([forward_nodes[key] for key in frontier if key in forward_nodes], forward_nodes)
    frontier -= {id(node) for node in again}
    checks, sources = shape_checks(inputs, guards)
    # new tensors are made like a floating input (token ids come first in a language model), and a constant of
    # another float dtype than that input's (a float32 region of a float64 model) names its own
    floating = [t for t in inputs if is_floating(t.dtype)]
    like, like_dtype = (floating[0].name, floating[0].dtype) if floating else (names[0], None)

    # forward: name shared nodes, the intermediates the backward needs and what the buffers' updates read
    update_inputs = {id(u.input) for u in updates if isinstance(u, BatchNormUpdate)}
    names_map: dict[int, str] = {id(t): t.name for t in inputs}
    printer = CodePrinter(names_map, like, fused=True, derivatives=False, like_dtype=like_dtype)  # fused kernels
    forward_lines: list[tuple[str, str]] = []
    counter = 0
    intermediates: list[str] = []
    folded: list[BatchNormUpdate] = []  # running statistics the forward's batch-norm kernel updates itself
    stateless: dict[str, str] = {}  # those forward statements without the update
    for key, node in forward_nodes.items():
        if key in groups:  # a value and its companions (the backward reads them): one kernel call returns them all
            labels, counter = tuple_labels(node, groups[key], names_map, counter)
            intermediates += [names_map[id(p)] for p in (node, *groups[key].values()) if id(p) in frontier]
            update = folded_update(node, updates, buffer_names or {}, output)
            fields = {} if update is None else running_fields(update, buffer_names or {})
            forward_lines.append((", ".join(labels), tuple_call(node, printer, **fields)))
            if update is not None:  # what a recomputation (the vjp, create_graph=True) runs: no update again
                folded.append(update)
                stateless[forward_lines[-1][0]] = tuple_call(node, printer)
            continue
        if key in companions:
            continue
        if node is output or node.op is None or names_map.get(key):
            continue
        if key in frontier or key in update_inputs or needs_name(node, uses, printer.doprint):
            counter += 1
            label = f"t_{counter}"
            forward_lines.append((label, printer.doprint(node)))
            names_map[key] = label
            if key in frontier:
                intermediates.append(label)
    keys = [n.attrs["key"] for n in forward_nodes.values() if is_draw(n)]
    if keys != sorted(keys):
        raise SymgradError("the model draws its random numbers in an order the emitted forward would not keep")
    fitted, counter = fit_statement(output, "output", 8, names_map, printer, counter)
    forward_lines += fitted
    forward_result = printer.doprint(output)
    update_lines, counter = buffer_statements(
        [u for u in updates if u not in folded], printer, buffer_names or {}, counter
    )
    names_map[id(output)] = "output"
    for node in again:  # the backward makes these again (its own names), from inputs it saves
        names_map.pop(id(node), None)

    # a draw the laws rebuilt (a copy of the forward's node, with its key) is the noise the forward saved: the
    # backward reads it and never draws again
    saved_noise = {n.attrs["key"]: names_map[k] for k, n in forward_nodes.items() if is_draw(n) and k in names_map}
    for key, node in law_nodes.items():
        if is_draw(node) and key not in names_map:
            if node.attrs["key"] not in saved_noise:
                raise SymgradError("the gradient reads a dropout's noise that the forward does not draw")
            names_map[key] = saved_noise[node.attrs["key"]]
    # new tensors in the backward follow the incoming gradient's dtype and device
    printer.like, printer.like_dtype = "grad_output", None
    printer.derivatives = True
    results: list[str] = []
    law_ids = {id(g) for g in laws}
    backward_only = {key: node for key, node in law_nodes.items() if key not in forward_nodes}
    _, backward_groups = _with_companions(backward_only, list(backward_only.values()))
    tuples = {}
    for key, group in backward_groups.items():
        for member in (backward_only[key], *group.values()):
            tuples[id(member)] = (backward_only[key], group)
    backward_lines, counter = name_statements(
        law_nodes.values(), names_map, printer, uses, counter, law_ids, tuples=tuples
    )
    drifted = drifts(list(laws), list(wrt), forward=set(forward_nodes), grad_output=v, output=output)
    for x, g, drifting in zip(wrt, laws, drifted):
        fitted, counter = fit_statement(g, f"grad_{x.name}", 8, names_map, printer, counter)
        backward_lines += fitted
        text = names_map.get(id(g)) or printer.doprint(g)
        constant = uniform_constant(g) if id(g) not in names_map and g.op is None and not g.shape else None
        if constant is not None:  # it prints as a Python number: return a tensor of x's shape instead
            value = repr(float(constant)) if constant.is_Number and constant.is_finite else text  # nan: math.nan
            text = f"grad_output.new_full({shape_tuple(x.shape)}, {value})"
        elif drifting:
            text = f"{text if text.isidentifier() else f'({text})'}.to({x.name}.dtype)"  # as autograd casts it
        backward_lines.append((f"grad_{x.name}", text))
        results.append(f"grad_{x.name}")
    if any(draws(body) for _, body in backward_lines):  # a bug of the planner: refuse rather than draw again
        raise SymgradError("the emitted backward would draw a dropout's noise again instead of reading the saved one")
    saved_inputs = [names_map[id(t)] for t in inputs if id(t) in frontier]
    drawn = {key: names_map[key] for key, node in forward_nodes.items() if is_draw(node) and key in frontier}
    moving, jvp_dims, jvp_lines, jvp_printer = _forward_mode(expression, inputs, sources, counter, drawn)
    gradients_text = _readable_lines(readable, wrt, [*names, *sizes])
    return Plan(
        inputs=names,
        forward_dims=dim_lines(sources, [*forward_lines, ("", forward_result), *(("", u) for u in update_lines)]),
        backward_dims=dim_lines(sources, backward_lines),
        checks=checks,
        forward=forward_lines,
        updates=update_lines,
        forward_result=forward_result,
        backward=backward_lines,
        results=results,
        saved_inputs=saved_inputs,
        saved_intermediates=intermediates + (["output"] if id(output) in frontier else []),
        jvp_dims=jvp_dims,
        jvp=jvp_lines,
        tangents=[t.name for t in moving],
        uses_math=printer.uses_math or jvp_printer.uses_math or any("math." in check for check in checks),
        helpers=sorted(printer.helpers | jvp_printer.helpers),
        aten_kernels=sorted(printer.aten_kernels | jvp_printer.aten_kernels),
        gradients_text=gradients_text,
        sources=sources,
        stateless=stateless,
    )


def _attribute_path(root: str, path: str) -> str:
    """``self.model.fc1.weight`` for the path ``fc1.weight`` (``getattr(..., "0")`` for a part that is no
    identifier): what the model's own forward reads, at the cost of attribute lookups, where ``get_parameter``
    walks the path through its checks on every call."""
    text = root
    for part in path.split("."):
        text = f"{text}.{part}" if part.isidentifier() and not keyword.iskeyword(part) else f'getattr({text}, "{part}")'
    return text


def _readable_lines(laws: Sequence[Tensor], wrt: Sequence[Tensor], taken: Sequence[str]) -> list[tuple[str, str, str]]:
    """The docstring's laws as (name, torch text, LaTeX), with the parts they share named once, first
    (``t1 = torch.tanh(W1 @ X + b1)``); the LaTeX of a shared part carries its name."""
    prefix = next(p for p in ("t", "u", "s", "r", "q") if not any(re.fullmatch(rf"{p}\d+", n) for n in taken))
    results = [(f"grad_{x.name}", g) for x, g in zip(wrt, laws)]
    code = listing(results, prefix=prefix)
    math = listing(results, printer=LatexPrinter, prefix=prefix)
    shared = [
        (name, body, f"{label} = {latex}")
        for (name, body), (label, latex) in zip(code.definitions, math.definitions, strict=True)
    ]
    return shared + [(name, body, latex) for (name, body), (_, latex) in zip(code.results, math.results, strict=True)]


def codegen(
    output: Tensor | Trace,
    wrt: Sequence[Tensor] | None = None,
    *,
    inputs: Sequence[Tensor] | None = None,
    style: str = "function",
    name: str = "Generated",
    expression: str | None = None,
    command: str | None = None,
    parameters: Mapping[str, str] | None = None,
    buffers: Mapping[str, str] | None = None,
) -> str:
    """Python source of a module computing ``output`` and the gradients of ``wrt``.

    ``style="function"`` emits ``forward``, ``vjp`` and ``forward_and_vjp`` (one pass that computes
    the forward values once); ``"autograd_function"`` (or ``"autograd-function"``) adds
    ``class <name>Function(torch.autograd.Function)`` and ``apply``. Given the result of
    :func:`symgrad.trace` instead of a tensor, the gradients are the module's parameters', and the
    module also gets ``class <name>Module(torch.nn.Module)``: a drop-in for the traced model whose
    forward runs the Function with the model's own parameters (``parameters`` and ``buffers`` map
    input names to the model's names, ``fc1.weight``).

    ``style="hvp"`` or ``"hessian"`` (for a one-element ``output``) emits ``forward``, ``gradient`` and
    ``hvp(<inputs>, <one tangent v_<x> per wrt input>)`` or ``hessian(<inputs>)``: see
    :mod:`.curvature_code`.
    """
    guards: list = []
    optional: list[str] = []  # inputs whose gradients the Function computes only where they require grad
    updates: list = []
    modes: dict[str, bool] = {}
    variant, other_failure = None, ""  # the module emitted in the model's other modes, or why there is none
    other_same = False  # whether the other modes compute the same (then no module is emitted for them)
    autocast: tuple[tuple[str, str], ...] = ()  # the torch.autocast a trace ran under
    buffer_names: dict[str, str] = {}
    pieces: list[Tensor] = []  # a traced tuple's outputs, computed as one flat tensor
    if isinstance(output, Trace):
        traced = output
        leaves = {**traced.parameters, **traced.buffers, **traced.attributes}
        output, pieces = _one_output(traced.output)
        if wrt is None:  # the parameters, and the inputs that require grad (a function's: its floating inputs)
            floating = [t for t in traced.inputs if is_floating(t.dtype)]
            wrt = [*traced.parameters.values(), *floating]
            if traced.parameters:  # a model's inputs: their gradients are computed where they require grad
                optional = [t.name for t in floating]
        inputs = [*traced.inputs, *leaves.values()] if inputs is None else inputs
        parameters = {leaf.name: path for path, leaf in traced.parameters.items()}
        buffers = {leaf.name: path for path, leaf in {**traced.buffers, **traced.attributes}.items()}
        style = style if style in STYLES else "autograd_function"
        guards, updates, modes, autocast = traced.guards, traced.updates, traced.modes, traced.autocast
        if modes and style == "autograd_function" and leaves:  # a drop-in to follow the model's mode is emitted
            variant, other_failure, other_same = _other_mode(traced, name)
        if traced.random_draws:
            raise SymgradError(
                f"the traced code draws random numbers ({traced.random_draws[0]}), which an emitted module would "
                "repeat as constants: pass them as an input"
            )
        if traced.updated_inputs:
            raise SymgradError(
                f"the traced code changes its input {traced.updated_inputs[0]} in place, which an emitted module "
                "would not do: pass a copy, or make it a buffer of the model"
            )
        buffer_names = {path: leaf.name for path, leaf in traced.buffers.items()}
    if wrt is None:
        raise SymgradError("codegen() needs wrt: the tensors to differentiate with respect to")
    style = style.replace("-", "_")
    if style in STYLES:
        return curvature_codegen(
            output, list(wrt), inputs=inputs, style=style, name=name, expression=expression, command=command
        )
    if style not in ("function", "autograd_function"):
        raise SymgradError(
            f"style must be 'function', 'autograd_function' (or 'autograd-function'), 'hvp', 'hessian' or 'newton', "
            f"not {style!r}"
        )
    check_class_name(name)
    inputs = list(inputs) if inputs is not None else list(output.leaves().values())
    names = code_names(inputs, dims_of([output, *inputs]), class_name=name)
    if names.inputs or names.sizes:  # the user's names that the code writes otherwise (see code_names)
        wrt, counts = list(wrt), (len(inputs), len(wrt), len(pieces), len(guards))
        rebuilt, _ = renamed([output, *inputs, *wrt, *pieces, *guards, *updates], names)
        output, rest = rebuilt[0], rebuilt[1:]
        inputs, rest = rest[: counts[0]], rest[counts[0] :]
        wrt, rest = rest[: counts[1]], rest[counts[1] :]
        pieces, rest = rest[: counts[2]], rest[counts[2] :]
        guards, updates = rest[: counts[3]], rest[counts[3] :]
        parameters = {names.inputs.get(k, k): v for k, v in (parameters or {}).items()}
        buffers = {names.inputs.get(k, k): v for k, v in (buffers or {}).items()}
        buffer_names = {path: names.inputs.get(n, n) for path, n in buffer_names.items()}
        optional = [names.inputs.get(n, n) for n in optional]
    p, blocks = outlined(plan(output, list(wrt), inputs, guards, updates, buffer_names))
    # each optional gradient, by its input's position: what the backward's wanted flags (needs_input_grad) say
    wanted = {f"grad_{t.name}": k for k, t in enumerate(inputs) if t.name in optional and any(t is x for x in wrt)}
    shapes = ", ".join(f"{t.name}: {format_shape(t.shape)}" for t in inputs)
    owned = {**(parameters or {}), **(buffers or {})}
    module_args = [_attribute_path("self.model", owned[t.name]) if t.name in owned else t.name for t in inputs]
    needed = needed_forward(p)
    shared = layout(p, needed)
    saved_inputs = function_saved_inputs(p, [("", shared["recompute_call"]), *shared["recompute"]])
    saved = saved_inputs + p.saved_intermediates
    function_dims = dims_for(p, p.backward)  # what the Function's backward reads (ctx.sizes)
    backward_params = [*read(saved, p.backward), *(d for d, _ in function_dims), "grad_output"]
    expression_line = None
    if expression is None:  # the forward as a listing: each shared part named once, so its size is the graph's
        forward = listing([("out", output)], prefix="f")
        expression = forward.results[0][1]
        if forward.definitions:
            lines = [wrapped(f"{n} = {docstring_safe(b)}", "    ") for n, b in forward.definitions + forward.results]
            expression_line = "Expression:\n" + "\n".join(lines)
            expression = "the expression at the top of this module"
    reached = {id(node) for node in topological(output)}
    steps = _step_parameters(output, wrt, owned, reached)
    other_arguments = drop_in_arguments(variant, name) if variant else []
    if other_same:
        other_arguments = [ast.unparse(ast.parse(argument)) for argument in module_args]
    autocast_input = next((t.name for t in inputs if is_floating(t.dtype)), None)
    context = {
        "module_args": module_args if owned and style == "autograd_function" else [],
        "step_parameters": steps,
        "wanted": bool(wanted),
        "every_input": f"(True,) * {len(inputs)}",
        "backward_blocks": guarded_backward(p.backward, p.results, wanted),
        "wanted_results": list(wanted),
        "step_grads": step_grads(steps or [], len(wrt)),
        "step_arguments": step_arguments(steps or [], module_args),
        "modes": modes,
        "mode_paths": tuple_text([repr(path) for path in modes]),
        "traced_modes": tuple_text([str(t) for t in modes.values()]),
        "other_modes": tuple_text([str(not t) for t in modes.values()]),
        "other_arguments": other_arguments,
        "other_same": other_same,
        "other_failure": other_failure,
        "data_inputs": [t.name for t in inputs if t.name not in owned],
        "plan": p,
        "blocks": blocks,
        "name": name,
        "style": style,
        "expression": docstring_safe(expression),
        "expression_line": expression_line or wrapped("Expression: out = " + docstring_safe(expression), ""),
        "shapes": wrapped("Shapes: " + docstring_safe(shapes), "")
        + (f"\n{wrapped(docstring_safe(names.note()), '')}" if names.note() else ""),
        "version": __version__,
        "command": wrapped(docstring_safe(command or "symgrad.codegen(...)"), "    "),
        "wrt": [x.name for x in wrt],
        "only_message": message_literal(
            f"{name}Function gives gradients for {', '.join(x.name for x in wrt)} only",
            "            raise RuntimeError(",
        ),
        "wrt_positions": {x.name: i for i, x in enumerate(inputs) if any(x is w for w in wrt)},
        "gradients": [
            (wrapped(f"{n} = {docstring_safe(t)}", "    "), wrapped(f"LaTeX: {docstring_safe(lt)}", "    "))
            for n, t, lt in p.gradients_text
        ],
        "vjp_dims": dims_for(p, [*shared["vjp_forward"], *p.backward]),
        "dim_names": [d for d, _ in function_dims],
        "function_dims": function_dims,
        "recompute_inputs": [name for name in saved_inputs if name not in p.saved_inputs],
        # the floating inputs it gives no gradient for (an integer input never requires grad)
        "fixed_positions": [
            str(i) for i, t in enumerate(inputs) if is_floating(t.dtype) and not any(t is x for x in wrt)
        ],
        "intermediates": [t for t in p.saved_intermediates if t != "output"],
        "saved": saved,
        "backward_params": backward_params,
        "jvp_positions": {name: i for i, name in enumerate(p.inputs)},
        "backward_unpack": unpacked(
            saved, [("", shared["recompute_call"]), *shared["recompute"], ("", " ".join(backward_params))]
        ),
        "jvp_unpack": unpacked(saved, [*p.jvp, *p.jvp_dims, *[("", f"zeros_like({x})") for x in p.tangents]]),
        "unpack_inputs": unpack_targets(p.inputs, saved_inputs, function_dims),
        "uses_torch": style == "autograd_function"
        or any(is_floating(t.dtype) for t in inputs)  # the autocast check
        or bool(set(p.helpers) - {"_index_backward", "_size_ratio"})  # the other helpers call torch
        or "torch." in " ".join(body for _, body in [*p.forward, ("", p.forward_result), *p.backward]),
        "table": shape_table(inputs, guards) if p.checks else None,
        "args": ", ".join(p.inputs),
        # the module computes at the precisions of the autocast it was traced under (none, or its explicit casts)
        "autocast_input": autocast_input,
        **_autocast_guard(autocast_input, name, autocast),
        **shared,
        "tangent_of": {x: f"tangent_{x}" for x in p.tangents},
        "backward_returns": gradients_by_input([next((k for k, x in enumerate(wrt) if x is t), None) for t in inputs]),
        **_split_context(pieces, p.sources),
    }
    source = _rendered(context)
    drop = {f"{name}Module", "_MODE_PATHS"}
    # the other modes compute the same (a dropout of probability 0): the drop-in runs one Function in both
    same_arguments = other_arguments == [ast.unparse(ast.parse(argument)) for argument in module_args]
    if variant and same_arguments and "apply" not in renamed_names(source, variant, drop):
        source = _rendered({**context, "other_same": True})
    elif other_arguments and not other_same:
        heading = (
            "The model in the other modes ("
            + ", ".join(f"{p or 'the model'} in {'eval' if t else 'training'} mode" for p, t in modes.items())
            + f"): its own trace, emitted as above, which {name}Module runs when the model's modes say so."
        )
        source = formatted(merged(source, variant, drop=drop, heading=heading), keep=DRAWS)
    return source


def _autocast_guard(first: str | None, name: str, state: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The emitted forward's test that torch.autocast is as it was traced under (off, or a device type and dtype
    whose casts the graph holds), and its message."""
    if not state:
        return {
            "autocast_check": f"torch.is_autocast_enabled({first}.device.type)",
            "autocast_message": message_literal(
                f"symgrad's emitted {name} was traced without torch.autocast and computes at its inputs' precisions: "
                "trace the model under the autocast it runs in (with torch.autocast(...): symgrad.trace(...)), or "
                "call it outside the autocast region",
                "        raise RuntimeError(",
            ),
        }
    device, dtype = ("cpu", dict(state)["cpu"]) if "cpu" in dict(state) else state[0]
    return {
        "autocast_check": f"not torch.is_autocast_enabled({device!r}) or torch.get_autocast_dtype({device!r}) != "
        f"torch.{dtype} or {first}.device.type != {device!r}",
        "autocast_message": message_literal(
            f"symgrad's emitted {name} was traced under torch.autocast({device!r}, dtype=torch.{dtype}) and computes "
            "at its precisions: call it under that autocast, or trace the model outside autocast for a module that "
            "runs there",
            "        raise RuntimeError(",
        ),
    }


def _rendered(context: dict[str, Any]) -> str:
    """The module template with ``context``, checked to be Python and formatted."""
    source = code_environment().get_template("module.py.j2").render(**context)
    source = re.sub(r"\n{4,}", "\n\n\n", source).rstrip() + "\n"  # at most two blank lines, as ruff format keeps
    try:
        tree = ast.parse(source)
        compile(tree, "<emitted module>", "exec")
    except SyntaxError as error:  # a bug of the emitter: refuse rather than hand out broken code
        raise SymgradError(f"the emitted module is not valid Python ({error.msg}, line {error.lineno})") from None
    return formatted(_unused_results_as_underscores(source, tree), keep=DRAWS)


def _other_mode(traced: Trace, name: str) -> tuple[str | None, str, bool]:
    """The module emitted from ``traced``'s code traced again with each mode-dependent submodule in the other mode
    (eval after a training trace), so that its drop-in follows ``model.eval()`` with no symgrad at run time; or
    None and why not; and whether the other modes compute the same (then there is none to emit)."""
    if traced.again is None or traced.model is None:
        return None, "its trace cannot be run again", False
    try:
        other = traced.in_modes({path: not training for path, training in traced.modes.items()})
        if _computes_the_same(traced, other):
            return None, "", True
        return codegen(dataclasses.replace(other, modes={}), name=name, style="autograd_function"), "", False
    except SymgradError as error:
        return None, f"symgrad refuses it there: {error}", False


def _computes_the_same(traced: Trace, other: Trace) -> bool:
    """Whether two traces of one model compute the same (a dropout of probability 0 is the same in both modes):
    the same output and buffer updates, under the same guards."""

    def described(t: Trace) -> tuple[list[str], list[Tensor]]:
        words = [str(g) for g in t.guards]
        tensors = list(flat(t.output))
        for update in t.updates:  # an Assign or a BatchNormUpdate: its tensor, and the rest as words
            fields = {f.name: getattr(update, f.name) for f in dataclasses.fields(update)}
            words.append(repr(sorted((k, str(v)) for k, v in fields.items() if not isinstance(v, Tensor))))
            tensors += [v for v in fields.values() if isinstance(v, Tensor)]
        return words, tensors

    (words, tensors), (other_words, other_tensors) = described(traced), described(other)
    return words == other_words and same_graphs(tensors, other_tensors)


def _one_output(output: Any) -> tuple[Tensor, list[Tensor]]:
    """What the emitted module computes for a traced output: the tensor itself, or for a tuple of tensors (a
    model's ``(logits, loss)``) one flat tensor of them all, which the drop-in splits again (and the tuple)."""
    if isinstance(output, Tensor):
        return output, []
    if not isinstance(output, (tuple, list)) or not output:
        raise SymgradError(
            f"the traced code returns a {type(output).__name__}, and an emitted module computes tensors: trace a "
            "function that returns a tensor or a tuple of them, e.g. lambda x, y: model(x, y)[1]"
        )
    for position, part in enumerate(output):
        if not isinstance(part, Tensor):
            raise SymgradError(
                f"the traced code returns a {type(part).__name__} in position {position} of its tuple, and an emitted "
                "module returns tensors: trace a function that returns the tensors only"
            )
    dtypes = sorted({part.dtype for part in output})
    if len(dtypes) > 1 or not is_floating(dtypes[0]):
        raise SymgradError(
            f"the traced code returns tensors of dtypes {', '.join(dtypes)}, and an emitted module returns floating "
            "tensors of one dtype: trace a function that returns those only"
        )
    flat = [part.reshape(-1) for part in output]
    return (flat[0] if len(flat) == 1 else apply("cat", *flat, dim=0)), list(output)


def _step_parameters(
    output: Tensor, wrt: Sequence[Tensor], owned: Mapping[str, str], reached: set[int]
) -> list[tuple[str, int]] | None:
    """For the drop-in's ``forward_and_backward``: the parameters the loss reads (their attribute paths) and the
    positions of their gradients (autograd leaves the ``.grad`` of a parameter it never reached alone). None when
    the method is
    not emitted: a loss that is not one number, or a loss whose dtype differs from its parameters' (its incoming
    gradient, 1, is made in their dtype)."""
    if output.shape or not wrt or not any(x.name in owned for x in wrt):
        return None
    if any(x.dtype != output.dtype for x in wrt) or not is_floating(output.dtype):
        return None
    paths = [_attribute_path("self.model", owned[x.name]) if x.name in owned else x.name for x in wrt]
    return [(path, k) for k, (path, x) in enumerate(zip(paths, wrt)) if id(x) in reached] or None


def _split_context(pieces: Sequence[Tensor], sources: dict) -> dict[str, Any]:
    """The drop-in's statements that split the flat output into the traced tuple (none for one tensor)."""
    if not pieces:
        return {"split_outputs": [], "split_dims": []}
    parts, start = [], sympy.Integer(0)
    for piece in pieces:
        length = sympy.Mul(*piece.shape) if piece.shape else sympy.Integer(1)
        parts.append(f"output.narrow(0, {size_source(start)}, {size_source(length)}).view({shape_tuple(piece.shape)})")
        start += length
    return {"split_outputs": parts, "split_dims": dim_lines(sources, [("", " ".join(parts))])}


def _unused_results_as_underscores(source: str, tree: ast.Module) -> str:
    """``t_2, t_3 = f(...)`` with the results its function never reads written ``_`` (as ruff asks): a statement
    with two results serves functions that read one of them or both."""
    lines = source.split("\n")
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        read = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for statement in ast.walk(function):
            if not isinstance(statement, ast.Assign) or not isinstance(statement.targets[0], ast.Tuple):
                continue
            names = [t.id for t in statement.targets[0].elts if isinstance(t, ast.Name)]
            if len(names) < 2 or all(name in read for name in names):
                continue
            line = lines[statement.lineno - 1]
            indent, value = line[: len(line) - len(line.lstrip())], line.split(" = ", 1)[1]
            lines[statement.lineno - 1] = f"{indent}{', '.join(n if n in read else '_' for n in names)} = {value}"
    return "\n".join(lines)


def _forward_mode(
    output: Tensor, inputs: Sequence[Tensor], sources: dict, counter: int = 0, drawn: Mapping[int, str] | None = None
) -> tuple[list[Tensor], list[tuple[str, str]], list[tuple[str, str]], CodePrinter]:
    """The Function's ``jvp``: J·t from the inputs and a tangent per floating input (``tangent_<x>``), so
    that forward-mode AD and ``torch.func.jacfwd``/``hessian`` work through it, whichever inputs move.
    Its statements are numbered after ``counter``, the last number the forward and backward used, so that no
    ``t_<n>`` of its own shadows a saved one. Random draws are never drawn again: the jvp reads the noise the forward
    saved (``drawn``: their saved names), and a graph with a draw not saved gets no jvp. Returns the inputs with
    tangents, the sizes it reads, its statements (the last ``output_tangent``) and its printer."""
    moving = [x for x in inputs if is_floating(x.dtype)]
    tangents = [symbols_like(x, f"tangent_{x.name}", distinct=True) for x in moving]
    names = {id(t): t.name for t in [*inputs, *tangents]}
    names.update(drawn or {})
    printer = CodePrinter(names, tangents[0].name if tangents else "output", fused=True)
    try:
        moved = jvp([output], moving, tangents, exact=True)[0]
    except SymgradError as error:  # no forward-mode rule for some op: the Function gets no jvp (torch then says so)
        if isinstance(error, WorkBudgetError):
            raise
        return [], [], [], printer
    if any(is_draw(node) and id(node) not in names for node in topological(moved)):
        return [], [], [], printer
    lines, counter = name_statements(topological(moved), names, printer, count_uses([moved]), counter, {id(moved)})
    lines += fit_statement(moved, "output_tangent", 8, names, printer, counter)[0]
    lines.append(("output_tangent", names.get(id(moved)) or printer.doprint(moved)))
    return moving, dim_lines(sources, lines), lines, printer


def _with_companions(
    nodes: dict[int, Tensor], wanted: Sequence[Tensor]
) -> tuple[dict[int, Tensor], dict[int, dict[int, Tensor]]]:
    """``nodes`` with each companion value among ``wanted`` (an op with ``companion_of``, such as the NLL's total
    weight or a max pooling's indices) placed right after the node of its primary op on the same inputs and
    attributes, and those groups (the primary's id to its companions by position): one call of the primary's
    ``tuple_code`` gives them all, as autograd's kernels return them together."""
    wanted = [n for n in wanted if n.op is not None and n.op.companion_of]
    groups: dict[int, dict[int, Tensor]] = {}
    for node in nodes.values() if wanted else ():
        if node.op is None or node.op.tuple_code is None:
            continue
        for companion in wanted:
            position = dict(companion.op.companion_of).get(node.op.name)
            same_inputs = len(companion.inputs) <= len(node.inputs) and all(
                a is b for a, b in zip(companion.inputs, node.inputs)
            )
            same_attrs = all(node.attrs.get(k) == v for k, v in companion.attrs.items())
            if position is not None and same_inputs and same_attrs:
                groups.setdefault(id(node), {}).setdefault(position, companion)
    placed: dict[int, Tensor] = {}
    for key, node in nodes.items():
        if key in placed:
            continue
        placed[key] = node
        for companion in groups.get(key, {}).values():
            placed[id(companion)] = companion
    return placed, groups


def compile_module(output: Tensor | Trace, wrt: Sequence[Tensor] | None = None, **kwargs) -> ModuleType:
    """The emitted module (see :func:`codegen`), loaded: its source is compiled in memory, no file is written."""
    return load_source(codegen(output, wrt, **kwargs), kwargs.get("name", "Generated"))
