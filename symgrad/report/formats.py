"""How an explanation writes headings, math and code in Markdown and in LaTeX.

The templates say *what* to write; these objects say *how*, so one body template
serves both formats. Math arrives as LaTeX built by :mod:`symgrad.explain` (safe by
construction); user text goes through :meth:`code`, which escapes it for the format.

>>> FORMATS["md"].code("a`b")
'``a`b``'
>>> FORMATS["tex"].code("x_1 & {y}")
'\\\\texttt{x\\\\_1 \\\\& \\\\{y\\\\}}'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.latex import text_latex
from .latex import LINE_BUDGET, break_formula, latex_width


@dataclass
class Step:
    """One line of a derivation, ``lhs = rhs`` in LaTeX; ``None`` in a list of steps stands for elided lines."""

    lhs: str
    rhs: str


class Format:
    """What both formats share: aligned display math, sums and running totals."""

    def step(self, lhs: str, rhs: str) -> Step:
        return Step(lhs, rhs)

    line_budget: float | None = None  # em a displayed line may take; None: never broken

    def math_lines(self, steps: Sequence[Any]) -> str:
        steps = self.broken(steps)
        if len(steps) == 1 and steps[0] is not None:
            s = steps[0]
            return f"{s.lhs} = {s.rhs}" if s.lhs else s.rhs
        lines = [r"&\vdots" if s is None else f"{s.lhs} {self._relation(s)}{s.rhs}" for s in steps]
        return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}"

    def broken(self, steps: Sequence[Any]) -> list[Any]:
        """The steps with every line too wide for the page cut before top-level ``+``, ``-``, ``\\odot``
        and ``\\cdot``; the continued lines hang under the first (see :func:`symgrad.report.latex.break_formula`)."""
        if self.line_budget is None:
            return list(steps)
        out: list[Any] = []
        for s in steps:
            if s is None:
                out.append(None)
                continue
            hanging = s.rhs.startswith(r"\quad")
            lead = latex_width(s.lhs) + (0.0 if hanging else 1.4)
            room = self.line_budget - lead
            body = s.rhs[len(r"\quad") :].lstrip() if hanging else s.rhs
            lines = break_formula(body, room - (1.0 if hanging else 0.0))
            first = r"\quad " + lines[0] if hanging else lines[0]
            out.append(Step(s.lhs, first))
            out.extend(Step("", r"\qquad " + line) for line in lines[1:])
        return out

    @staticmethod
    def _relation(step: Step) -> str:
        """``=`` starts an equation; a continued sum (``\\quad + …``) hangs under the previous line."""
        return "&" if step.rhs.startswith((r"\quad", r"\qquad")) else "&= "

    def weighted_sum(self, lhs: str, terms: Sequence[str | None], result: str) -> list[Step]:
        """``lhs = v_0 row_0 + v_1 row_1 + … = result``, one term per line so that wide rows fit."""
        pieces = [r"\cdots" if t is None else t for t in terms]
        lines = [Step(lhs, pieces[0])] + [Step("", r"\quad + " + p) for p in pieces[1:]]
        return lines + [Step("", result)]

    def running_totals(self, gradient: Any) -> list[Any]:
        name = r"\texttt{" + gradient.label + ".grad}"
        return [None if s is None else Step(f"{name}^{{({s.lhs})}}", s.rhs) for s in gradient.per_element]


class MarkdownFormat(Format):
    name = "md"
    line_budget = LINE_BUDGET  # KaTeX and MathJax do not break displays either: a page of text is as wide

    def heading(self, title: str, level: int = 2) -> str:
        return "#" * level + " " + title

    def display(self, steps: Sequence[Any]) -> str:
        return "$$\n" + self.math_lines(steps) + "\n$$"

    def code(self, text: str) -> str:
        longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
        fence = "`" * (longest + 1)
        pad = " " if text.startswith("`") or text.endswith("`") else ""
        return f"{fence}{pad}{text}{pad}{fence}"

    def code_block(self, pairs: Iterable[tuple[str, str]], plain: bool = False) -> str:
        lines = [body if plain or not name else f"{name} = {body}" for name, body in pairs]
        text = "\n".join(lines)
        longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
        fence = "`" * (longest + 1)
        return f"{fence}{'' if plain else 'python'}\n{text}\n{fence}"

    def items(self, items: Iterable[Any], describe: Any = str) -> str:
        return "\n".join(f"- {describe(item)}" for item in items)

    def figure(self, path: str, caption: str) -> str:
        """A picture beside the document (its file name, as written next to it)."""
        return f"![{caption}]({path.replace(' ', '%20')})"


class LatexFormat(Format):
    name = "tex"
    line_budget = LINE_BUDGET

    def heading(self, title: str, level: int = 2) -> str:
        command = {1: "section*", 2: "section*", 3: "subsection*"}[level]
        return f"\\{command}{{{title}}}"

    def display(self, steps: Sequence[Any]) -> str:
        return "\\[\n\\fitdisplay{" + self.math_lines(steps) + "}\n\\]"  # see templates/explain.tex.j2

    def code(self, text: str) -> str:
        """Code in typewriter type; a long call may break after its dots and commas."""
        escaped = text_latex(text)
        if len(text) > 24:
            escaped = re.sub(r"([.,])(?=\S)", r"\1\\allowbreak{}", escaped)
        return r"\texttt{" + escaped + "}"

    def code_block(self, pairs: Iterable[tuple[str, str]], plain: bool = False) -> str:
        lines = [body if plain or not name else f"{name} = {body}" for name, body in pairs]
        body = " \\\\\n".join(text_latex(line) for line in lines)
        return "\\begin{flushleft}\\small\\ttfamily\n" + body + "\n\\end{flushleft}"

    def figure(self, path: str, caption: str) -> str:
        """A picture beside the document, where the text puts it (no float), at its natural size: turned on its
        side if only that fits the text width, and scaled down only if neither way fits the page."""
        return (
            "\\par\\medskip\\begingroup\\centering\n"
            f"\\sbox0{{\\includegraphics{{{path}}}}}%\n"
            "\\ifdim\\wd0>\\linewidth\\ifdim\\ht0<\\linewidth\\sbox0{\\rotatebox{90}{\\usebox0}}\\fi\\fi\n"
            "\\ifdim\\wd0>\\linewidth\\sbox0{\\resizebox{\\linewidth}{!}{\\usebox0}}\\fi\n"
            "\\dimen0=\\dimexpr\\textheight-4\\baselineskip\\relax  % room for the caption\n"
            "\\ifdim\\ht0>\\dimen0\\sbox0{\\resizebox{!}{\\dimen0}{\\usebox0}}\\fi\n"
            f"\\usebox0\\par\\nopagebreak\\smallskip{{\\small {caption}\\par}}\n\\endgroup"
        )

    def items(self, items: Iterable[Any], describe: Any = str) -> str:
        return "\\begin{itemize}\n" + "\n".join(f"\\item {describe(item)}" for item in items) + "\n\\end{itemize}"


FORMATS: dict[str, Format] = {"md": MarkdownFormat(), "tex": LatexFormat()}
