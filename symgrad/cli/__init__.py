"""The command line: ``symgrad derive | explain | codegen | catalogue | repl``.

- :mod:`.main`: the argument parser and the verbs; bad input prints one line and exits 2,
  a disagreement with torch exits 1;
- :mod:`.catalogue`: ``generated/``, what symgrad emits for a catalogue of real expressions;
- :mod:`.repl`: a console where ``torch`` is :mod:`symgrad.torch`.

This is the top layer: it may import every other package.
"""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
