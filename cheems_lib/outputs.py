"""Outputs that survive interrupts: atomic files, single-writer locks, clean signal exits.

Every file a command writes appears at its destination only when complete: it is written
to a temporary file in the same folder (same file system, so the rename is atomic) and
renamed over the destination with :func:`os.replace`. A kill at any instant leaves the old
complete file or the new complete one, never a truncated file; the temporary file is
removed on an exception or interrupt and is named ``.NAME.tmp-PID-TOKEN`` when a SIGKILL
leaves it behind; :func:`remove_stale_temporaries` removes those of processes that are gone (the
book build does, in every folder it writes). :func:`atomic_path` is the library's one atomic
file write: every other writer goes through it.

What an output path is decides how it is written (:func:`classify_output`, used by every
writer: :func:`atomic_path`, :func:`atomic_open`, the score file of ``cheems score``, the
folders of ``cheems simulate`` and ``cheems train``, via :func:`folder_problem`):

* absent or a regular file: written atomically as above;
* not a regular file (``/dev/null``, ``/dev/full``, a pipe) or a symbolic link to one:
  written *through*, opened and written in place with nothing renamed (there is nothing
  there to lose, and a link is never replaced by a regular file);
* a link to an open file descriptor (``/dev/stdout``, ``/proc/self/fd/1``, a link to
  either): written through that descriptor, at its current offset, so
  ``cheems resolve x -o /dev/stdout > out.txt`` puts the records and then the summary in
  ``out.txt``;
* a link to a regular file, or a dangling link: written atomically *at the file it points
  to* (the temporary file beside that file), so the link stays a link;
* a symbolic link loop: refused, ``OSError(ELOOP)``, which the command line reports as bad
  input (exit 2) before anything is written;
* a folder: refused (``IsADirectoryError``) for a file output. A folder output may be a
  link to a folder (written at the folder it points to) but not a loop, a file or a device.

No output is an input: before it reads anything for long or writes anything, every command refuses an
output that is a file or folder it reads (:func:`cheems_lib.input_files.check_not_input`: the same ``(st_dev, st_ino)`` through
symbolic and hard links), one inside a folder it reads whole, and a folder output replaced whole that holds
an input (exit 2, one line). One writer per output: every command holds the output's :class:`OutputLock`
(``PATH.lock`` beside what the path names, :func:`output_lock`) while it writes; ``train`` and ``score`` take it
once per ``accelerate launch``, in the main process, and a second writer stops with ``another process (pid N)
is writing this output`` (exit 2).

A full disk is an ``OSError(ENOSPC)`` (exit 1, the previous output unchanged). Libraries that
report a failed write otherwise (torch's zip writer: a ``RuntimeError`` "unexpected pos";
safetensors' own error type) are translated by :func:`write_error` where models are saved.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
>>> with atomic_open(p, "w") as fh:
...     _ = fh.write("complete")
>>> p.read_text()
'complete'
>>> classify_output(p).kind, classify_output(p.with_name("new")).kind
('regular', 'absent')

Interrupt points (tests only). A test that must interrupt a command at a chosen moment
does not sleep or poll and then kill (under load the command may finish first): it sets
``CHEEMS_TEST_INTERRUPT=POINT=N:SIGNAL[,POINT=N:SIGNAL...]`` and the command sends the real
``SIGNAL`` (``SIGKILL``, ``SIGINT`` or ``SIGTERM``) to itself the ``N``-th time it reaches
:func:`interrupt_point` ``(POINT)`` (counted per process; to its process group when it leads
one, as Ctrl-C reaches the whole foreground group). The points, each reached after the step named:

- ``atomic.written`` / ``atomic.replaced``: :func:`atomic_path` wrote its temporary file / renamed it;
- ``score.batch``: a batch of scores was appended to ``OUT.partial`` (:mod:`cheems_lib.models.scoring`);
- ``train.step``: an optimisation step (and its log line) is done (:mod:`cheems_lib.models.training`);
- ``checkpoint.written`` / ``checkpoint.saved``: a checkpoint's temporary folder is written / renamed;
- ``publish.staging`` / ``publish.staged`` / ``publish.swapped``: the finished model's weights are in the
  staging folder / the staging folder is complete / it replaced the output, the old one not yet deleted
  (:mod:`cheems_lib.models.run_folder`);
- ``world.file`` / ``world.staged`` / ``world.swapped``: one file of a world is written / the staged world
  is complete / it replaced the output, the old one not yet deleted (:mod:`cheems_lib.world_files`);
- ``book.cell`` / ``book.executed``: a chapter's kernel executed a cell / a chapter ran, before its
  notebook replaces the last good one (:mod:`cheems_lib.publishing.execute`).

The variable is read once; unset, a point costs one function call.
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import signal
import stat
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

__all__ = ["interrupt_point", "parse_interrupts", "atomic_path", "atomic_open", "classify_output", "OutputPath", "folder_problem", "write_error",
           "exchange", "pid_alive", "remove_stale_temporaries", "OutputLock", "LockedError", "output_lock",
           "exit_on_sigterm"]

# the kinds of output path classify_output tells apart
ABSENT, REGULAR, DIRECTORY, SPECIAL = "absent", "regular", "directory", "special"
LINK_FD, LINK_SPECIAL, LINK_REGULAR, LINK_DIRECTORY = "link-fd", "link-special", "link-regular", "link-directory"
DANGLING, LOOP = "dangling", "loop"
_THROUGH = (SPECIAL, LINK_SPECIAL, LINK_FD)
_PROC_FD = re.compile(r"/proc/(?:self|(\d+))/fd/(\d+)")
_TEMPORARY = re.compile(r"^\..+\.tmp-(?P<pid>\d+)-[0-9a-f]{8}$")  # atomic_path's temporary names (_temporary_name)


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


@dataclass(frozen=True)
class OutputPath:
    """What an output path is (:func:`classify_output`)."""

    kind: str  # one of the kinds above
    path: Path  # as given
    target: Path  # where the bytes go: ``path``, or for a link to a regular file (or a dangling one) its target
    fd: int | None = None  # for LINK_FD: this process's descriptor the link names

    @property
    def through(self) -> bool:
        """Written in place (a device, a pipe, a descriptor): nothing renamed, nothing to protect."""
        return self.kind in _THROUGH


def _own_fd(path: Path) -> tuple[bool, int | None]:
    """Whether a link chain from ``path`` passes through ``/proc/PID/fd/N``; and N when PID is this process."""
    p = path
    for _ in range(40):  # the kernel's limit on links followed
        m = _PROC_FD.fullmatch(os.path.join(os.path.realpath(p.parent), p.name))
        if m:
            return True, int(m.group(2)) if m.group(1) in (None, str(os.getpid())) else None
        if not p.is_symlink():
            return False, None
        p = p.parent / os.readlink(p)  # an absolute target replaces the parent
    return False, None


def classify_output(path: str | Path) -> OutputPath:
    """Tell what ``path`` is as an output: absent, regular, directory, special (a device, a pipe),
    or a symbolic link to a descriptor, a special file, a regular file, a directory or nothing
    (dangling), or a loop. Reads only (``lstat``, ``stat``, ``readlink``)."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except OSError as e:  # absent, or below a file (the write then says so); a loop in a parent folder
        return OutputPath(LOOP if e.errno == errno.ELOOP else ABSENT, path, path)
    if not stat.S_ISLNK(mode):
        kind = REGULAR if stat.S_ISREG(mode) else DIRECTORY if stat.S_ISDIR(mode) else SPECIAL
        return OutputPath(kind, path, path)
    via_fd, fd = _own_fd(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:
            return OutputPath(LOOP, path, path)
        return OutputPath(DANGLING, path, Path(os.path.realpath(path)))
    if via_fd:  # /dev/stdout redirected to a regular file is written through the descriptor, not replaced
        return OutputPath(LINK_FD if fd is not None else LINK_SPECIAL, path, path, fd)
    if stat.S_ISREG(mode):
        return OutputPath(LINK_REGULAR, path, Path(os.path.realpath(path)))
    return OutputPath(LINK_DIRECTORY if stat.S_ISDIR(mode) else LINK_SPECIAL, path, path)


def _loop_error(path) -> OSError:
    return OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))


def folder_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be an output folder (a link loop, a device or pipe, a link to one), or None.

    A link to a folder, or a dangling link, is fine: the folder is written where it points.
    A regular file is left to the caller (each command words that refusal itself).
    """
    kind = classify_output(path).kind
    if kind == LOOP:
        return f"is a symbolic link loop ({os.strerror(errno.ELOOP)})"
    if kind in _THROUGH:
        return "is not a folder but a device, a pipe or a link to one"
    return None


def _temporary_name(dest: Path) -> Path:
    """The hidden sibling ``.NAME.tmp-PID-TOKEN`` that :func:`atomic_path` writes ``dest`` through (the pid
    tells :func:`remove_stale_temporaries` whether its writer is gone)."""
    return dest.with_name(f".{dest.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def remove_stale_temporaries(*folders: str | Path) -> list[Path]:
    """Remove the temporary files of :func:`atomic_path` in ``folders`` whose process is gone (a SIGKILL
    between writing and renaming leaves one); returns them. A live writer's file is left alone, and so is
    anything else (folders, other hidden files)."""
    removed = []
    for folder in map(Path, folders):
        for p in folder.glob(".*.tmp-*"):
            m = _TEMPORARY.match(p.name)
            if m and p.is_file() and not p.is_symlink() and not pid_alive(int(m["pid"])):
                p.unlink(missing_ok=True)
                removed.append(p)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` when the block succeeds.

    The temporary file is fsynced before the rename so a power loss cannot expose an
    empty destination either. A link to a regular file (or a dangling link) is written at
    its target; a device, pipe or link to one is yielded as is (written through); a loop
    raises ``OSError(ELOOP)`` and a folder ``IsADirectoryError``, before anything is written.
    """
    out = classify_output(path)
    if out.kind == LOOP:
        raise _loop_error(path)
    if out.kind in (DIRECTORY, LINK_DIRECTORY):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if out.through:
        yield out.path
        return
    dest = out.target
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary_name(dest)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        interrupt_point("atomic.written")
        os.replace(tmp, dest)
        interrupt_point("atomic.replaced")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "wb", **kwargs):
    """``open(path, mode)`` whose content replaces ``path`` only when the block succeeds.

    A link to this process's descriptor (``/dev/stdout``) is written through a duplicate of
    that descriptor, after what Python has buffered for it, so nothing is overwritten.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files; mode {mode!r} is not 'w' or 'wb'")
    out = classify_output(path)
    if out.kind == LINK_FD:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, OSError, ValueError):
                if stream.fileno() == out.fd:
                    stream.flush()
        with open(os.dup(out.fd), mode, **kwargs) as fh:
            yield fh
        return
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as fh:
        yield fh


# torch's zip writer (torch.save) reports any failed write, ENOSPC included, as one of these
_TORCH_WRITE_FAILURES = ("unexpected pos", "PytorchStreamWriter failed", "file write failed")
NEARLY_FULL_BYTES = 64 * 2**20  # less free space than this after a failed write: the disk is full


def _free_bytes(path: Path) -> int | None:
    for p in (path, *path.parents):
        with contextlib.suppress(OSError):
            st = os.statvfs(p)
            return st.f_bavail * st.f_frsize
    return None


def write_error(e: BaseException, path: str | Path) -> OSError | None:
    """The ``OSError`` that a library's failed write under ``path`` stands for; None if ``e`` is none.

    safetensors reports ``... (os error 28)`` in its own error type; torch's zip writer a
    ``RuntimeError`` without the errno, taken as ENOSPC when the file system of ``path``
    is nearly full (:data:`NEARLY_FULL_BYTES`) and as EIO otherwise. Call it before the
    half-written files are removed (they hold the space that tells a full disk).
    """
    if isinstance(e, OSError):
        return None
    text = " ".join(str(e).split())
    m = re.search(r"os error (\d+)", text)
    if m:
        n = int(m.group(1))
        return OSError(n, os.strerror(n), str(path))
    torch_zip = isinstance(e, RuntimeError) and any(s in text for s in _TORCH_WRITE_FAILURES)
    free = _free_bytes(Path(path)) if torch_zip else None
    if free is not None and free < NEARLY_FULL_BYTES:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    if torch_zip or type(e).__name__ == "SafetensorError":
        return OSError(errno.EIO, f"could not write ({text[:200]})", str(path))
    return None


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
    """An exclusive lock on ``PATH.lock`` (flock: released when the process dies); the library's one lock.

    ``with OutputLock(out):`` refuses at once (:class:`LockedError`, with the holder's pid) when another
    process is writing the same output, instead of letting two writers interleave lines. With
    ``wait=True`` it waits for the holder to finish instead (the model zoo: the second chapter that needs
    a model waits for the first to train it, then reuses it). With ``join=True`` a writer goes on under a hold
    that its own thread took before calling it (the zoo's lock on a model folder, then the lock of the training
    run it starts there; ``cheems simulate``'s, then :func:`cheems_lib.world_files.write_world`'s): the outer
    block releases it. Without it, a second hold is refused even in the same thread. Folders above
    ``PATH.lock`` that it created are removed again when they are left empty (a command refused after
    taking its lock writes nothing).
    """

    def __init__(self, path: str | Path, *, wait: bool = False, join: bool = False):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.wait = wait
        self.join = join
        self._fh = None
        self._key = ""  # the lock file's real path, under which this thread holds it
        self._made: list[Path] = []  # folders made for the lock file, shallowest first

    def __enter__(self) -> "OutputLock":
        import fcntl

        self._key = os.path.join(os.path.realpath(self.lock_path.parent), self.lock_path.name)
        held = _held_here()
        if self.join and self._key in held:  # this thread holds it already: the outer block releases it
            self._fh = None
            return self
        while True:
            self._made += _make_folders(self.lock_path.parent)
            fh = open(self.lock_path, "a+")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "?"
                fh.close()
                self._remove_made()
                raise LockedError(f"{self.path}: another process (pid {holder}) is writing this output "
                                  "(fix: wait for it to finish, or choose another output path)") from None
            except BaseException:  # an interrupt while waiting
                fh.close()
                self._remove_made()
                raise
            try:  # the holder before us may have unlinked the file after we opened it: lock the current one
                same = os.fstat(fh.fileno()).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            fh.close()
        fh.seek(0)
        mine = fh.read(64).strip()
        if mine and not mine.isdigit():  # a file of the user's that happens to bear the lock's name: never ours to empty
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()
            self._remove_made()
            raise LockedError(f"{self.lock_path}: exists and is not a lock file, and a writer of {self.path} would "
                              "overwrite and then delete it (fix: move that file away, or choose another output path)")
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        held.add(self._key)
        return self

    def __exit__(self, *exc) -> None:
        if self._fh is None:  # joined the hold of this thread's outer block
            return
        _held_here().discard(self._key)
        self.lock_path.unlink(missing_ok=True)
        self._remove_made()  # before the lock goes: a waiter makes them again if it needs them
        self._fh.close()
        self._fh = None

    def _remove_made(self) -> None:
        for folder in reversed(self._made):
            try:
                folder.rmdir()
            except OSError:  # not empty (the output is in it), or gone
                break
        self._made = []


_held = threading.local()  # the lock files this thread holds (OutputLock keys)


def _held_here() -> set[str]:
    if not hasattr(_held, "keys"):
        _held.keys = set()
    return _held.keys


def _make_folders(folder: Path) -> list[Path]:
    """``mkdir -p folder``; the folders it made, shallowest first. A file on the way is
    ``NotADirectoryError`` naming that file (as writing below it would be)."""
    missing = []
    p = folder
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    if not p.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(p))
    made = []
    for q in reversed(missing):
        try:
            q.mkdir()
            made.append(q)
        except FileExistsError:  # made meanwhile by another process: not ours to remove
            pass
    return made


def output_lock(path: str | Path):
    """The :class:`OutputLock` a command holds while it writes the output ``path`` (a file or a folder): beside
    what ``path`` names after symbolic links, so two spellings of one output share a lock. None
    (``contextlib.nullcontext``) for a device, a pipe or a link to one (written through: nothing to
    interleave) and for a link loop (refused by the writer, with nothing written)."""
    out = classify_output(path)
    if out.through or out.kind == LOOP:
        return contextlib.nullcontext()
    if out.kind == LINK_DIRECTORY:
        return OutputLock(os.path.realpath(path))
    return OutputLock(out.target)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so ``finally`` blocks remove temporary files."""

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
