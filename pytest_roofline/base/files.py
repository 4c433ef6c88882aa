"""Reading YAML mappings and writing files atomically: the package's only file helpers.

Everything the package writes (JSON reports, calibration caches, trace directories) appears whole or not
at all: it is written beside its target under a temporary name and renamed at the end. A target that is not a
regular file (/dev/null, /dev/stdout, a FIFO, a symlink to one) is written into, never renamed over.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["read_yaml_mapping", "write_text_atomic", "is_special_file", "write_text_new", "write_directory_atomic",
           "check_writable", "json_text", "remove_stale_temporaries", "read_text",
           "process_running"]



def read_yaml_mapping(text: str, where: str, error: type[ValueError] = ValueError) -> dict[str, Any]:
    """Parse YAML that must be a mapping (empty text is an empty mapping); errors name ``where``. PyYAML is imported
    here, on first use: a pytest run that reads no YAML pays nothing for it."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's where installed: ten times faster
    try:
        data = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise error(f"{where}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise error(f"{where}: expected a mapping at the top level, got {type(data).__name__}")
    if _expands_past(data, YAML_VALUES_MAX):
        raise error(f"{where}: its aliases expand it to more than {YAML_VALUES_MAX:,} values (an alias that repeats an "
                    f"alias, again and again: a few hundred bytes can stand for billions); write the values out")
    return dict(data)


# More values than any settings or hardware file holds; a file past it is refused before anything reads or quotes a
# value (a 330-byte file of nested aliases as `min:` had taken 32-120 s and 1-1.6 GB to quote in an error).
YAML_VALUES_MAX = 100_000


def _expands_past(data: Any, limit: int) -> bool:
    """Whether ``data``, every alias followed as often as it is used, holds more than ``limit`` values; stops as
    soon as it does (an alias is a shared object: the loader builds it once, a walk meets it each time)."""
    seen, stack = 0, [data]
    while stack:
        value = stack.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return False


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def read_text(path: str | os.PathLike[str]) -> str:
    """A text file's content: UTF-8, or any encoding its byte-order mark names (a file saved as UTF-16 by an
    editor); an OSError where it cannot be read, a ValueError (one line) where it is not text."""
    raw = Path(path).read_bytes()
    encoding = next((name for bom, name in _BOMS if raw.startswith(bom)), "utf-8")
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not {encoding.upper()} text (byte {raw[exc.start]:#04x} at offset {exc.start}); "
                         f"save it as UTF-8") from None
    if "\x00" in text:
        raise ValueError("not text: it holds NUL characters (a binary file?)")
    return text


def json_text(value: Any, indent: int | None = 2) -> str:
    """``value`` as strict JSON: a non-finite float (the intensity of a kernel that does no work) becomes null,
    since ``Infinity`` and ``NaN`` are not JSON and JavaScript's ``JSON.parse`` rejects them; other values that
    JSON lacks are written as their ``str``."""
    return json.dumps(_finite(value), indent=indent, default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` as ``open()`` would create it (0666 less the umask), but so that a reader
    never sees half a file. A character device, a FIFO or a socket (or a symlink to one) is written into: renaming
    a file over /dev/null would replace the system's /dev/null."""
    target = Path(path)
    if is_special_file(target):
        _write_into(target, text.encode("utf-8"))
        return target
    return _written_beside(target, text, os.replace)


def is_special_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (its symlinks followed) exists and is neither a regular file nor a directory, or names one of
    this process's open files (/dev/stdout, /dev/fd/N, /proc/self/fd/N, or a symlink to one), whatever that is: a
    CI log that stdout goes to is a regular file, and renaming over /dev/stdout would replace it for the system."""
    if _fd_behind(path) is not None:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


_FD_NAMES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _fd_behind(path: str | os.PathLike[str]) -> int | None:
    """The file descriptor of this process that ``path`` names, its symlinks followed one by one as written (the
    file they end at is not asked: /proc/self/fd/1 of a CI job is its log); None where it names none."""
    at = os.path.abspath(path)
    own = re.compile(rf"/(?:dev/fd|proc/self/fd|proc/{os.getpid()}/fd)/(\d+)")
    for _ in range(40):  # the system's own limit on a chain of symlinks
        if at in _FD_NAMES:
            return _FD_NAMES[at]
        if (named := own.fullmatch(at)) is not None:
            return int(named.group(1))
        if not os.path.islink(at):
            return None
        at = os.path.normpath(os.path.join(os.path.dirname(at), os.readlink(at)))
    return None


def _write_into(target: Path, data: bytes) -> None:
    """Write into an existing special file: through this process's own descriptor where ``target`` names one (its
    offset shared with what the process writes there, so that neither overwrites the other; Python's buffers
    flushed first), else opened without blocking, so that a FIFO no process reads is an error, not a hang."""
    fd = _fd_behind(target)
    if fd is not None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        _write_all(fd, data)
        return
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, f"{target} is a FIFO that no process reads: start its reader first") from None
        raise
    try:
        os.set_blocking(fd, True)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_text_new(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` whole, only if no file of that name exists: FileExistsError otherwise, even when
    another process makes it at the same moment (the complete file is hard-linked to its name, which the system
    does only where the name is free)."""

    def link(tmp: str, target: Path) -> None:
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: reserve the name, then fill it
            os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            os.replace(tmp, target)

    return _written_beside(path, text, link)


def _written_beside(path: str | os.PathLike[str], text: str, put: Callable[[str, Path], None]) -> Path:
    """``text`` written whole to a temporary file beside ``path`` (0666 less the umask), then ``put`` in place; the
    temporary file never stays behind."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        put(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


def write_directory_atomic(target: str | os.PathLike[str], fill: Callable[[Path], None]) -> Path:
    """Make ``target`` by letting ``fill`` write a temporary directory beside it, then renaming it: a failed
    ``fill`` leaves nothing behind; an existing ``target`` is replaced. Temporary directories that a killed process
    left beside it (its pid gone, untouched for a minute) are removed first."""
    final = Path(target)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(final.parent)
    prefix = f".{final.name[:60]}{_TEMPORARY}{os.getpid()}-"
    directory = Path(tempfile.mkdtemp(prefix=prefix, dir=final.parent))
    try:
        fill(directory)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    for _ in range(8):  # another process may put its own there meanwhile: the last one wins, whole
        if final.exists():
            old = Path(tempfile.mkdtemp(prefix=f"{prefix}old-", dir=final.parent))
            try:
                final.rename(old / "replaced")
            except FileNotFoundError:
                pass
            shutil.rmtree(old, ignore_errors=True)
        try:
            directory.rename(final)
            return final
        except OSError:
            continue
    shutil.rmtree(directory, ignore_errors=True)
    raise OSError(f"could not put {final} in place: other processes kept writing it")


_TEMPORARY = ".tmp-"  # a temporary directory's name: .<target>.tmp-<pid>-<random>
_STALE_AFTER_S = 60.0


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary directories in ``folder`` whose writer is gone (a SIGKILL while a trace was saved):
    its pid no longer runs and nothing was written there for a minute. Returns what was removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        pid = _writer_pid(entry.name)
        if pid is None or process_running(pid) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if time.time() - entry.stat(follow_symlinks=False).st_mtime < _STALE_AFTER_S:
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _writer_pid(name: str) -> int | None:
    if not name.startswith(".") or _TEMPORARY not in name:
        return None
    head = name.rpartition(_TEMPORARY)[2].partition("-")[0]
    return int(head) if head.isdigit() else None


def process_running(pid: int) -> bool:
    """Whether process ``pid`` runs (another user's counts as running)."""
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT there: taken as running
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def check_writable(path: str | os.PathLike[str]) -> str | None:
    """Why a file could not be written at ``path`` (None when it could): its directory must exist or be
    creatable, and be writable. Nothing is left behind."""
    target = Path(path)
    if target.is_dir():
        return f"{target} is a directory"
    if is_special_file(target):  # /dev/null, /dev/stdout, a FIFO: written into, nothing made beside it
        return None if os.access(target, os.W_OK) else f"{target} is not writable"
    parent = target.parent
    existing = parent
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"directory {existing} is not writable"
    if target.exists() and not os.access(target, os.W_OK):
        return f"{target} is not writable"
    return _probe(existing)


def _probe(directory: Path) -> str | None:
    """Why no file can be created in ``directory`` (None when one can): the permission bits do not tell for a
    superuser or a special file system such as /proc, so a file is made there and removed at once."""
    try:
        fd, name = tempfile.mkstemp(prefix=".roofline-check-", dir=directory)
    except OSError as exc:
        return f"cannot create a file in {directory}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(name)
    return None
