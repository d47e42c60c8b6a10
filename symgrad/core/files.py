"""Files written atomically, and outputs refused before any work when they can never be written.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_file(folder / "a.txt", "one").read_text()
'one'
>>> sorted(p.name for p in folder.iterdir())  # no temporary file left behind
['a.txt']
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


class OutputError(OSError):
    """An output that cannot be written; the message names the path and the reason."""


def check_writable(path: Path) -> None:
    """Refuse, before any work is done, an output that can never be written: a directory, or a file in a
    folder that does not exist."""
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory")
    folder = path.parent
    if not folder.is_dir():
        reason = "is not a directory" if folder.exists() else "does not exist"
        raise OutputError(f"cannot write {path}: the folder {folder} {reason}")


def write_file(path: Path | str, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically: into a temporary file in the same folder,
    renamed over ``path`` only once it is complete, so that ``path`` holds either its old content or the new
    one, never a part. A symlink is followed; a target that is not a regular file (``/dev/stdout``,
    ``/dev/full``, a FIFO) cannot be renamed over and is written directly. Any failure removes the temporary
    file and raises :class:`OutputError` naming ``path`` and the reason."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    check_writable(path)
    target = Path(os.path.realpath(path))
    try:
        if target.exists() and not target.is_file():
            with open(target, "wb") as stream:
                stream.write(payload)
        else:
            _replace(target, payload)
    except OSError as error:
        reason = error.strerror or " ".join(str(error).split()) or type(error).__name__
        raise OutputError(f"cannot write {path}: {reason}") from error
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _replace(target: Path, payload: bytes) -> None:
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~_umask()
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
