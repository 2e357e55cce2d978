"""Outputs that survive interrupts: atomic files, single-writer locks, clean signal exits.

Every file a command writes appears at its destination only when complete: it is written
to a temporary file in the same folder (same file system, so the rename is atomic) and
renamed over the destination with :func:`os.replace`. A kill at any instant leaves the old
complete file or the new complete one, never a truncated file; the temporary file is
removed on an exception or interrupt and is named ``.NAME.tmp-PID`` when a SIGKILL leaves
it behind. Destinations that are not regular files (``/dev/stdout``, ``/dev/full``, a
pipe) are written directly: there is nothing to lose there.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
>>> with atomic_open(p, "w") as fh:
...     _ = fh.write("complete")
>>> p.read_text()
'complete'
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import sys
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "atomic_open", "exchange", "pid_alive", "OutputLock", "LockedError", "exit_on_sigterm"]


def _is_special(path: Path) -> bool:
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` when the block succeeds.

    The temporary file is fsynced before the rename so a power loss cannot expose an
    empty destination either.
    """
    path = Path(path)
    if _is_special(path):
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "wb", **kwargs):
    """``open(path, mode)`` whose content replaces ``path`` only when the block succeeds."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files; mode {mode!r} is not 'w' or 'wb'")
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


def exchange(a: str | Path, b: str | Path) -> bool:
    """Swap two existing paths in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``).

    Returns False where the call is unavailable (another system, an old kernel, a file
    system without it); callers then fall back to two renames and repair a kill between
    them on the next run. This is how a finished folder (a model, a world) replaces an
    old one without ever leaving neither.
    """
    if sys.platform != "linux":
        return False
    import ctypes

    fn = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(str(a)), at_fdcwd, os.fsencode(str(b)), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs: a temporary file named after a dead process is a leftover."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else
        return True
    return True


class LockedError(RuntimeError):
    """Another process holds the lock on an output."""


class OutputLock:
    """An exclusive, non-blocking lock on ``PATH.lock`` (flock: released when the process dies).

    ``with OutputLock(out):`` refuses at once, with the holder's pid, when another
    process is writing the same output, instead of letting two writers interleave lines.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._fh = None

    def __enter__(self) -> "OutputLock":
        import fcntl

        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fh = open(self.lock_path, "a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "?"
                fh.close()
                raise LockedError(f"{self.path}: another process (pid {holder}) is writing this output "
                                  "(fix: wait for it to finish, or choose another output path)") from None
            try:  # the holder before us may have unlinked the file after we opened it: lock the current one
                same = os.fstat(fh.fileno()).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        return self

    def __exit__(self, *exc) -> None:
        self.lock_path.unlink(missing_ok=True)
        self._fh.close()
        self._fh = None


def exit_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so ``finally`` blocks remove temporary files."""

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
