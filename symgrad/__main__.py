"""``python -m symgrad`` is the ``symgrad`` command."""

from .cli import main

raise SystemExit(main())
