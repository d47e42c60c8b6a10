"""``symgrad explain --verify``: the verdict of :func:`symgrad.verify_backward` as a Markdown document, in English
or Chinese, with the formulas where the backward differs written in LaTeX.

>>> import torch, symgrad as sg
>>> class Double(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         return 2 * x
...     @staticmethod
...     def backward(ctx, g):
...         return 2 * g
>>> verdict = sg.verify_backward(Double, torch.ones(2, dtype=torch.float64))
>>> render_verification(verdict, "zh").splitlines()[0]
'# Double.backward 的证明'
"""

from __future__ import annotations

import re
from typing import Any

import sympy

from ..core.errors import TorchValueError
from ..core.printers import LatexPrinter
from ..emit.templates import document_environment
from .html import markdown_html, page, title_of
from .latex import LINE_BUDGET, break_formula, formula_latex, latex_width

MAX_FORMULA = 1500  # LaTeX characters of a formula shown in the document; longer ones are only in the report

WORDS = {
    "en": {
        "title": "Proof of {name}.backward",
        "verdict_held": "**Proved**: the backward returns the vector-Jacobian product of the forward.",
        "verdict_wrong": "**Wrong**: the backward does not return the vector-Jacobian product of the forward.",
        "method": "symgrad ran the Function's own code with symbols for its floating inputs and for the incoming "
        "gradient, derived the vector-Jacobian product of its forward, and compared it with what the backward "
        "returns, entry by entry and exactly; where sizes are symbolic, at small distinct sizes and against "
        "torch's numbers at larger ones.",
        "gradients": "Gradients",
        "second": "Second order",
        "second_method": "Differentiating through the backward, as `create_graph=True` does: the forward runs "
        "under `no_grad`, so what it saves besides its inputs and outputs is a constant.",
        "second_skipped": "The second order was not checked, since the first is wrong.",
        "forward_mode": "Forward mode: the Function's jvp",
        "proved": "proved",
        "differs": "differs",
        "first_entry": "first entry that differs",
        "backward_gives": "the backward gives",
        "true_value": "the true value",
        "law_backward": "as a law, for every size, the backward gives",
        "law_true": "the true law",
        "example": "numbers",
        "cause": "Why",
        "causes": {
            "once_differentiable": "the backward is `once_differentiable`: torch refuses to differentiate it again, "
            "so only the first order is claimed.",
            "saved intermediate": "a saved intermediate. The forward saves a tensor that is neither an input nor "
            "an output; torch keeps it as a constant, so under `create_graph=True` nothing flows back through it.",
            "non-differentiable output": "a saved output marked non-differentiable (`ctx.mark_non_differentiable`); "
            "torch keeps it as a constant, so under `create_graph=True` nothing flows back through it.",
            "detach": "a `.detach()`, a `torch.no_grad()` region or an in-place change in the backward.",
            "in place": "torch's double backward refuses: the backward changes in place a tensor that one of its "
            "own ops saved (for instance `p *= g` after `p = torch.softmax(z, 1)`); write that step out of place "
            "(`p = p * g`).",
        },
        "long": "(too long to show here: see `symgrad verify`)",
    },
    "zh": {
        "title": "{name}.backward 的证明",
        "verdict_held": "**已证明**：backward 返回的正是 forward 的向量-雅可比积。",
        "verdict_wrong": "**有误**：backward 返回的不是 forward 的向量-雅可比积。",
        "method": "symgrad 用符号代替浮点输入和传入的梯度，运行这个 Function 自己的代码，推导出 forward "
        "的向量-雅可比积，再与 backward 的返回值逐个元素精确比较；尺寸为符号时，先在几组互不相同的小尺寸上比较，"
        "再在较大的尺寸上与 torch 的数值对照。",
        "gradients": "梯度",
        "second": "二阶",
        "second_method": "像 `create_graph=True` 那样对 backward 再求导：forward 在 `no_grad` 下运行，"
        "因此它保存的张量中，除了输入和输出，其余都是常量。",
        "second_skipped": "一阶已经有误，所以没有检查二阶。",
        "forward_mode": "前向模式：Function 的 jvp",
        "proved": "已证明",
        "differs": "不一致",
        "first_entry": "第一个不一致的元素",
        "backward_gives": "backward 给出",
        "true_value": "正确的值",
        "law_backward": "写成对任意尺寸成立的公式，backward 给出",
        "law_true": "正确的公式",
        "example": "数值",
        "cause": "原因",
        "causes": {
            "once_differentiable": "backward 标注了 `once_differentiable`：torch 拒绝对它再求导，因此只声明一阶。",
            "saved intermediate": "保存了中间量。forward 保存的某个张量既不是输入也不是输出，torch 把它当作常量，"
            "所以在 `create_graph=True` 下没有梯度经过它传回去。",
            "non-differentiable output": "保存了被标记为不可导（`ctx.mark_non_differentiable`）的输出。torch 把它当作"
            "常量，所以在 `create_graph=True` 下没有梯度经过它传回去。",
            "detach": "backward 里有 `.detach()`、`torch.no_grad()` 区域或原地修改。",
            "in place": "torch 拒绝二阶反向传播：backward 原地修改了它自己的某个运算保存的张量"
            "（如 `p = torch.softmax(z, 1)` 之后的 `p *= g`）；把这一步改成非原地的写法（`p = p * g`）。",
        },
        "long": "（太长，这里不列出：见 `symgrad verify` 的输出）",
    },
}


def render_verification(verdict: Any, lang: str = "en", fmt: str = "md") -> str:
    """A :class:`symgrad.verify.backward.BackwardVerdict` as a Markdown (``md``) or standalone LaTeX (``tex``)
    document, or as one HTML page read from the Markdown (``html``, see :mod:`symgrad.report.html`), in ``lang``
    (``en`` or ``zh``)."""
    if lang not in WORDS:
        raise TorchValueError(f"unknown language {lang!r}: choose en or zh")
    if fmt == "html":
        markdown = render_verification(verdict, lang, "md")
        return page(markdown_html(markdown, lang), lang, title=title_of(markdown))
    if fmt not in ("md", "tex"):
        raise TorchValueError(f"unknown format {fmt!r}: choose md, tex or html")
    words = WORDS[lang]

    def cause(kind: str) -> str:
        return f"**{words['cause']}**: {words['causes'][kind]}"

    def formula(expr: Any) -> str:
        text = sympy.latex(expr)
        return f"${text}$" if len(text) <= MAX_FORMULA else words["long"]

    def display(expr: Any) -> str:
        """A formula set on as many lines as the page needs (long sums elided)."""
        lines = break_formula(formula_latex(expr), LINE_BUDGET)
        if any(latex_width(line) > LINE_BUDGET for line in lines):  # a fraction or root wider than the page
            return text_latex_prose(words["long"])
        return "\\begin{align*}\n" + " \\\\\n".join(f"& {line}" for line in lines) + "\n\\end{align*}"

    def law(t: Any) -> str:
        """A law (a tensor of symbolic shape) in LaTeX: inline in Markdown, displayed in LaTeX."""
        text = LatexPrinter().doprint(t)
        if fmt == "md":
            return f"${text}$" if len(text) <= MAX_FORMULA else words["long"]
        if latex_width(text) > LINE_BUDGET:
            return text_latex_prose(words["long"])
        return f"\\[ {text} \\]"

    def bold(markdown: str) -> str:
        return re.sub(r"\*\*(.+?)\*\*", lambda m: "\\textbf{" + m.group(1) + "}", text_latex_prose(markdown))

    template = document_environment().get_template(f"verify.{fmt}.j2")
    text = template.render(
        verdict=verdict,
        w=type("Words", (), words),
        formula=formula,
        display=display,
        law=law,
        text=text_latex_prose,
        bold=bold,
        cause=cause,
        first_held=all(g.held for g in verdict.gradients),
        list=list,
        lang=lang,
    )
    return re.sub(r"\n{3,}", "\n\n", text)


def text_latex_prose(text: str) -> str:
    """Prose for TeX's text mode: special characters escaped, Markdown's `code` as \\texttt (CJK kept as it is:
    the Chinese document is set by xelatex)."""
    parts = re.split(r"`([^`]*)`", text)
    out = []
    for k, part in enumerate(parts):
        escaped = "".join(_TEX_ESCAPES.get(c, c) for c in part)
        out.append("\\texttt{" + escaped + "}" if k % 2 else escaped)
    return "".join(out)


_TEX_ESCAPES = {
    "\\": "\\textbackslash{}", "{": "\\{", "}": "\\}", "_": "\\_", "&": "\\&", "%": "\\%", "$": "\\$",
    "#": "\\#", "^": "\\^{}", "~": "\\~{}", "…": "\\ldots{}", "·": "$\\cdot$", "ₓ": "x", "×": "$\\times$",
}  # fmt: skip
