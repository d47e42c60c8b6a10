"""Make the helper modules in tests/ (e.g. markdown_math) importable: --import-mode=importlib leaves sys.path alone.
Run torch on one thread in each test process: pytest-xdist runs one process per core, and torch's own threads on top
of them wait on each other (a gradcheck of small float64 convolutions ran 4 times slower on two threads)."""

import os
import sys
from pathlib import Path

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported, here and in the subprocesses tests start
try:
    import torch
except ImportError:  # the tests that need torch skip without it
    torch = None
if torch is not None:
    torch.set_num_threads(1)

# Yardsticks too slow for every CI run carry @pytest.mark.slow: CI skips them, SYMGRAD_FULL=1 runs them.
FULL = os.environ.get("SYMGRAD_FULL", "") == "1"


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: a yardstick the CI run skips; SYMGRAD_FULL=1 runs it")


def pytest_collection_modifyitems(config, items) -> None:
    if FULL:
        return
    import pytest

    skip = pytest.mark.skip(reason="a slow yardstick: SYMGRAD_FULL=1 runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
