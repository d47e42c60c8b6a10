"""How many examples the property tests draw: the CI budget, times ``SYMGRAD_EXAMPLES`` when it is set.

``SYMGRAD_EXAMPLES=10 python -m pytest tests/derive tests/emit`` draws ten times the examples of a
CI run (thousands in all), for a thorough run before a release.
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("SYMGRAD_EXAMPLES", "1"))


def examples(ci_count: int) -> int:
    """The number of examples for a property whose CI run draws ``ci_count``."""
    return max(1, round(ci_count * SCALE))
