"""Placeholder: the safe string parser (being written)."""


def parse(text, shapes=None, values=None, **kwargs):
    raise NotImplementedError
