"""The ``symgrad`` console command: :func:`.main.main`, then an exit that skips the interpreter's teardown where
torch was loaded (0.4 s of a 2 s command goes to unloading torch), once everything said is flushed. ``serve`` and
``repl`` exit as usual: their processes and handlers clean up at exit."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from .main import main

_CLEANED_UP_AT_EXIT = ("serve", "repl")


def command() -> NoReturn:
    """Run the command line and exit with its code."""
    code = main()
    verb = next((argument for argument in sys.argv[1:] if not argument.startswith("-")), None)
    if "torch" in sys.modules and verb not in _CLEANED_UP_AT_EXIT:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a closed pipe (symgrad ... | head): nothing more can be said
            pass
        os._exit(code)
    sys.exit(code)
