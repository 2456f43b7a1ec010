"""One results folder per survey run: `survey.json` (the survey's own evidence: the plan, every
step's outcome, what it created and what is left), every command's evidence under `evidence/`,
each step's output under `logs/`, the placements (`placement.json`: where each stack went,
failover included) and the forwards (`forwards.json`) of this run only, and the report."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from catalog.config import PLACEMENT_ENV
from runner.cloud.reach.forwards_file import FORWARDS_ENV
from runner.core.errors import RunnerError
from runner.core.evidence import load
from runner.render.survey import SurveyFile

STATE_FILE = "survey.json"


@dataclass(frozen=True)
class SurveyFolder:
    root: Path

    @classmethod
    def new(cls, results_dir: Path) -> SurveyFolder:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M%S")
        root = results_dir / f"survey-{stamp}"
        suffix = 1
        while root.exists():
            suffix += 1
            root = results_dir / f"survey-{stamp}-{suffix}"
        for folder in (root, root / "evidence", root / "logs"):
            folder.mkdir(parents=True, exist_ok=True)
        return cls(root)

    @classmethod
    def existing(cls, root: Path) -> tuple[SurveyFolder, SurveyFile]:
        """A folder runner.survey wrote, with its state; anything else is one line."""
        state = root / STATE_FILE
        if not root.is_dir() or not state.is_file():
            raise RunnerError(
                f"{root} is not a survey's results folder: it has no {STATE_FILE} (runner.survey writes one)"
            )
        try:
            data = load(state)
        except RunnerError:
            raise RunnerError(f"{root} is not a survey's results folder: {STATE_FILE} is not runner.survey's") from None
        if data.get("command") != "survey" or "steps" not in data or "options" not in data:
            raise RunnerError(f"{root} is not a survey's results folder: {STATE_FILE} holds no survey steps")
        for folder in (root / "evidence", root / "logs"):
            folder.mkdir(parents=True, exist_ok=True)
        return cls(root), SurveyFile.from_json(data, state)

    @property
    def state(self) -> Path:
        return self.root / STATE_FILE

    @property
    def evidence_dir(self) -> Path:
        return self.root / "evidence"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def report_markdown(self) -> Path:
        return self.root / "report.md"

    def evidence_files(self) -> list[Path]:
        return sorted(self.evidence_dir.glob("*/*.json"))

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    @contextlib.contextmanager
    def in_use(self) -> Iterator[None]:
        """One survey process at a time in this folder (a second is one line), and every command
        it runs keeps its placements and forwards here."""
        lock = (self.root / ".lock").open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise RunnerError(
                f"another runner.survey is running in {self.root}: let it finish (or stop it) first"
            ) from None
        names = {PLACEMENT_ENV: self.root / "placement.json", FORWARDS_ENV: self.root / "forwards.json"}
        saved = {name: os.environ.get(name) for name in names}
        os.environ.update({name: str(path) for name, path in names.items()})
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
