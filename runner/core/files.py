"""Files the runner reads and writes: the project's root, the machine's cache outside the clone, a
JSON file a user points at (one line when it is missing or broken), one way to write a file whole
(a partial file, then a rename, so a reader never sees half of it), and a lock between processes."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.core.errors import RunnerError

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def cache_root() -> Path:
    """What is built once per machine and shared by its clones (the model, the converted
    checkpoint; the set-up scripts' environments, by the same rule in scripts/cache.sh):
    INFERENCE_CACHE_DIR, else $XDG_CACHE_HOME/inference-survey, else ~/.cache/inference-survey."""
    if os.environ.get("INFERENCE_CACHE_DIR"):
        return Path(os.environ["INFERENCE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "inference-survey"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created) between processes: test workers, clones."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_text_file(path: Path, what: str, hint: str = "") -> str:
    """The text of a file the user pointed at; one line, not a traceback, when it cannot be read:
    missing (`hint` says how to make it), a folder, not readable, not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunnerError(f"{what} {path} does not exist{hint}") from None
    except IsADirectoryError:
        raise RunnerError(f"{what} {path} is a folder: give the file(s) in it") from None
    except UnicodeDecodeError as error:
        raise RunnerError(f"{what} {path} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise RunnerError(f"{what} {path} cannot be read: {error.strerror or error}") from None


def read_json_file(path: Path, what: str, hint: str = "") -> Any:
    """Parse a JSON file the user pointed at; a file that cannot be read or is not JSON is one line."""
    text = read_text_file(path, what, hint)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise RunnerError(f"{what} {path} is not JSON: {error.msg} at line {error.lineno}") from None


def write_atomically(target: Path, text: str) -> Path:
    """Write `text` to `target` whole, readable by its owner alone: into a partial file of this
    process, then renamed over it. A write that fails (a full disk, a read-only folder, Ctrl-C)
    leaves no partial file behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        # The owner's alone (0600), whatever the umask: evidence names the account's servers,
        # endpoints and instances, and keeps every answer.
        partial.unlink(missing_ok=True)
        partial.touch(mode=0o600)
        partial.write_text(text)
        partial.replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise
    return target


def unwritable_folder(folder: Path) -> str | None:
    """Why no file can be written in `folder` (made as needed), or None: asked before a run starts,
    so that a folder that is a file or read-only is refused before anything is measured or made.
    Tried by writing an empty file where the folder's nearest existing parent is, then removed
    (permissions alone do not say it: the superuser writes past them, not past a read-only mount)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    probe = existing / f".writable-{os.getpid()}"
    try:
        probe.write_text("")
    except OSError as error:
        return f"{existing}: {error.strerror or error}"
    finally:
        with contextlib.suppress(OSError):
            probe.unlink(missing_ok=True)
    return None


def check_output_file(path: Path, what: str) -> None:
    """Refuse, before anything is made, an output file that cannot be written (`what`: the flag)."""
    if path.is_dir():
        raise RunnerError(f"{what} {path} is a folder: give a file name in it")
    why = unwritable_folder(path.parent)
    if why is not None:
        raise RunnerError(f"{what} {path} cannot be written: {why}")
