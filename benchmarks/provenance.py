"""Where a benchmark's numbers come from: the commit, and whether symgrad/ or templates/ differ from it
(they change the emitted code). Shared by the benchmarks, which run as scripts from the repository root."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git_state() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "symgrad", "templates"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        changed = sum(1 for line in dirty if line.strip())
        return f"git {head}" + (f" + {changed} uncommitted file(s) in symgrad/ templates/" if changed else " (clean)")
    except (OSError, subprocess.CalledProcessError):
        return "git unknown"
