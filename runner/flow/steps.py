"""Running one step of a survey: a command's `run(argv)` called in this process, its output shown
and kept in the step's log, its time and outcome recorded with the evidence files it wrote.

A step never stops the survey by failing: a command's one-line fault (exit 2), any exit status,
an argparse refusal and even a bug (its traceback goes to the log) are the step's outcome. Ctrl-C
is the one thing that goes on up, once the command has saved what it measured."""

from __future__ import annotations

import contextlib
import io
import sys
import time
import traceback
from collections.abc import Callable
from typing import TextIO

from catalog import CatalogError
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.evidence import now_iso
from runner.flow.folder import SurveyFolder
from runner.render.survey import StepRecord

PASSED, FAILED, SKIPPED, INTERRUPTED, KEPT = "passed", "failed", "skipped", "interrupted", "kept"
# A step with one of these outcomes is not run again by --resume.
SETTLED = (PASSED, FAILED, SKIPPED)


class Tee(io.TextIOBase):
    """Writes go to the terminal stream and to the step's log; the terminal's isatty stays."""

    def __init__(self, shown: TextIO, kept: TextIO) -> None:
        self.shown, self.kept = shown, kept

    def write(self, text: str) -> int:
        self.shown.write(text)
        self.kept.write(text)
        return len(text)

    def flush(self) -> None:
        self.shown.flush()
        self.kept.flush()

    def isatty(self) -> bool:
        return self.shown.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.shown, "encoding", "utf-8")


def log_name(index: int, step: str, backend: str | None) -> str:
    return f"{index:02d}-{step}{'-' + backend if backend else ''}.log"


def run_step(folder: SurveyFolder, index: int, step: str, backend: str | None, call: Callable[[], int]) -> StepRecord:
    """Run `call` (a command's run(argv)) as step `index`; KeyboardInterrupt comes back as the
    `interrupted` outcome, after the command saved its evidence."""
    before = set(folder.evidence_files())
    log = folder.logs / log_name(index, step, backend)
    record = StepRecord(step, backend, FAILED, started_at=now_iso(), log=folder.relative(log))
    start = time.monotonic()
    with (
        log.open("w") as kept,
        contextlib.redirect_stdout(Tee(sys.stdout, kept)),
        contextlib.redirect_stderr(Tee(sys.stderr, kept)),
    ):
        try:
            record.exit_code = call()
            record.status = PASSED if record.exit_code == 0 else FAILED
        except (RunnerError, CatalogError) as error:
            record.exit_code, record.line = 2, str(error)
            console.print(f"[red]error:[/red] {error}")
        except KeyboardInterrupt:
            record.exit_code, record.status, record.line = 130, INTERRUPTED, "Ctrl-C"
        except SystemExit as exit:  # an argument the command refused (argparse exits 2)
            record.exit_code = exit.code if isinstance(exit.code, int) else 2
            record.line = f"the command refused its arguments (exit {record.exit_code})"
        except Exception as error:  # a bug in one step never stops the others: its traceback is in the log
            record.exit_code, record.line = 1, f"{type(error).__name__}: {error}"
            traceback.print_exc()
    record.seconds = round(time.monotonic() - start, 2)
    record.evidence = [folder.relative(p) for p in sorted(set(folder.evidence_files()) - before)]
    if record.status == FAILED and not record.line:
        record.line = f"exit {record.exit_code}"
    return record


def skipped(step: str, backend: str | None, why: str) -> StepRecord:
    return StepRecord(step, backend, SKIPPED, started_at=now_iso(), line=why)
