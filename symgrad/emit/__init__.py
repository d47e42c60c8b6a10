"""Emission: torch code from gradient laws, and the Jinja2 environments every template goes through.

- :mod:`.codegen`: a torch module with ``forward``, ``vjp``, ``forward_and_vjp`` and a
  ``torch.autograd.Function`` whose backward is the closed-form law, printed statement by
  statement from ``templates/module.py.j2``; :func:`compile` loads it;
- :mod:`.code_text`: the code printer, checked names, shape checks and in-memory loading that every
  emitted module shares;
- :mod:`.module_check`: the emitted module against torch.autograd and ``gradcheck``;
- :mod:`.templates`: where templates live and the three Jinja2 environments (code,
  Markdown reports, TeX-safe documents).

A new printer goes here (a subclass of :class:`symgrad.core.Printer` with ``_print_<op>``
methods). This package imports :mod:`symgrad.verify` (to check what it emits) and everything below it.
"""

from .code_text import CodePrinter, check_identifier, load_source, size_source
from .codegen import Plan, codegen, compile_module, plan
from .codegen import compile_module as compile  # noqa: A004 - the public name is sg.compile
from .module_check import CurvatureCheck, ModuleCheck, check_curvature_module, check_module
from .templates import code_environment, document_environment, template_dir, text_environment

__all__ = [
    "CodePrinter",
    "CurvatureCheck",
    "ModuleCheck",
    "Plan",
    "check_curvature_module",
    "check_identifier",
    "check_module",
    "code_environment",
    "codegen",
    "compile",
    "compile_module",
    "document_environment",
    "load_source",
    "plan",
    "size_source",
    "template_dir",
    "text_environment",
]
