"""``python -m symgrad`` is the ``symgrad`` command."""

from .cli.command import command

command()
