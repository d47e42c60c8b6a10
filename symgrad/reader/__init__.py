"""Reading torch-spelled expression strings into symbolic tensors, safely.

- :mod:`.syntax`: the text becomes a syntax tree (:func:`ast.parse`), checked against a
  whitelist and size limits before anything is built; numbers and shapes are read the same way;
- :mod:`.builder`: a visitor builds the graph with the functions of :mod:`symgrad.torch`.

Nothing in the text is evaluated: no ``eval``, ``exec`` or ``sympify`` of user text. This
package imports :mod:`symgrad.torch` (whose functions it calls) and everything below it.
"""

from .builder import parse
from .syntax import MAX_CHARS, MAX_DEPTH, MAX_EXPONENT, MAX_LITERAL, MAX_NODES, parse_shape, parse_values

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_EXPONENT", "MAX_LITERAL", "MAX_NODES", "parse", "parse_shape", "parse_values"]
