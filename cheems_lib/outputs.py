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

Interrupt points (tests only). A test that must interrupt a command at a chosen moment
does not sleep or poll and then kill (under load the command may finish first): it sets
``CHEEMS_TEST_INTERRUPT=POINT=N:SIGNAL[,POINT=N:SIGNAL...]`` and the command sends the real
``SIGNAL`` (``SIGKILL``, ``SIGINT`` or ``SIGTERM``) to itself the ``N``-th time it reaches
:func:`interrupt_point` ``(POINT)`` (counted per process; to its process group when it leads
one, as Ctrl-C reaches the whole foreground group). The points, each reached after the step named:

- ``atomic.written`` / ``atomic.replaced``: :func:`atomic_path` wrote its temporary file / renamed it;
- ``score.batch``: a batch of scores was appended to ``OUT.partial`` (:mod:`cheems_lib.scoring`);
- ``train.step``: an optimisation step (and its log line) is done (:mod:`cheems_lib.training`);
- ``checkpoint.written`` / ``checkpoint.saved``: a checkpoint's temporary folder is written / renamed;
- ``publish.staging`` / ``publish.staged`` / ``publish.swapped``: the finished model's weights are in the
  staging folder / the staging folder is complete / it replaced the output, the old one not yet deleted
  (:mod:`cheems_lib.run_folder`);
- ``world.file`` / ``world.staged`` / ``world.swapped``: one file of a world is written / the staged world
  is complete / it replaced the output, the old one not yet deleted (:mod:`cheems_lib.world_files`);
- ``book.cell`` / ``book.executed``: a chapter's kernel executed a cell / a chapter ran, before its
  notebook replaces the last good one (:mod:`cheems_lib.book`).

The variable is read once; unset, a point costs one function call.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Iterator

__all__ = ["interrupt_point", "parse_interrupts", "atomic_path", "atomic_open", "exchange", "pid_alive", "OutputLock",
           "LockedError", "exit_on_sigterm"]


_INTERRUPT_VAR = "CHEEMS_TEST_INTERRUPT"
_SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}
_plan: dict[str, dict[int, signal.Signals]] | None = None  # point -> {N: signal}; {} when the variable is unset
_counts: dict[str, int] = {}
_counts_pid = 0  # counts belong to one process: a forked child starts again from zero
_counts_lock = threading.Lock()


def parse_interrupts(text: str) -> dict[str, dict[int, signal.Signals]]:
    """``"score.batch=3:SIGKILL,train.step=1:SIGINT"`` -> ``{"score.batch": {3: SIGKILL}, ...}``.

    >>> parse_interrupts("a.b=2:SIGINT")
    {'a.b': {2: <Signals.SIGINT: 2>}}
    """
    plan: dict[str, dict[int, signal.Signals]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, rest = item.partition("=")
        n, _, sig = rest.partition(":")
        if not name or not n.isdigit() or int(n) < 1 or sig not in _SIGNALS:
            raise ValueError(f"{_INTERRUPT_VAR}: {item!r} is not POINT=N:SIGNAL with N >= 1 and SIGNAL one of "
                             f"{', '.join(_SIGNALS)} (fix: e.g. {_INTERRUPT_VAR}=score.batch=3:SIGKILL)")
        plan.setdefault(name, {})[int(n)] = _SIGNALS[sig]
    return plan


def interrupt_point(name: str) -> None:
    """A moment where a test may interrupt this process with a real signal (see the module docstring).

    Does nothing unless ``CHEEMS_TEST_INTERRUPT`` names ``name``; raises ValueError when the
    variable is malformed.
    """
    global _plan, _counts_pid
    if _plan is None:
        _plan = parse_interrupts(os.environ.get(_INTERRUPT_VAR, ""))
    if not _plan or name not in _plan:
        return
    with _counts_lock:
        if _counts_pid != os.getpid():
            _counts.clear()
            _counts_pid = os.getpid()
        _counts[name] = n = _counts.get(name, 0) + 1
    sig = _plan[name].get(n)
    if sig is None:
        return
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), sig)
    else:
        os.kill(os.getpid(), sig)


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
        interrupt_point("atomic.written")
        os.replace(tmp, path)
        interrupt_point("atomic.replaced")
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
