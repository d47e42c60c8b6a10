"""The command line: ``symgrad derive | explain | codegen | catalogue | repl``.

- :mod:`.main`: the argument parser and the verbs; every failure is one line on stderr (``--debug``
  shows the traceback): exit 1 when the result disagrees with torch, 2 for bad input, an unwritable output,
  the work budget or time limit exceeded, or an internal error (a bug, named in one line);
- :mod:`.catalogue`: ``generated/``, what symgrad emits for a catalogue of real expressions, and how
  every verb writes a file (atomically) and JSON (strictly);
- :mod:`.models`: ``--module FILE.py:NAME --input x=m,3``, a model from a file, traced as it runs;
- :mod:`.repl`: a console where ``torch`` is :mod:`symgrad.torch`.

This is the top layer: it may import every other package.
"""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
