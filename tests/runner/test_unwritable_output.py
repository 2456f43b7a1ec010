"""Output that cannot be written: a results folder that is a file or read-only is refused before
anything is measured or asked (one line, exit 2); a disk that fills up during a run does not stop
it (said once, every request still measured, the table printed, one line at the end, exit 1) and
leaves no partial file; a report page aimed at a folder or an unwritable place is one line.

A read-only or full filesystem is made at the one boundary every runner write goes through
(`Path.write_text`: the partial file `write_atomically` renames, and the empty file a folder is
tried with), as the kernel answers: a read-only mount refuses any file (EROFS, whoever writes:
permissions would not stop the superuser), a full disk still takes an empty file but no bytes
(ENOSPC, the file left behind for the writer to clean up)."""

from __future__ import annotations

import errno
import importlib
import json
import os
import sys
from pathlib import Path

import pytest

from runner.core.backend_entries import BackendEntry
from runner.core.evidence import Evidence
from runner.core.records import RequestRecord
from runner.measure.bench_file import BenchFile
from tests.runner.fake_openai import FakeOpenAI, text

OCEAN = "The ocean is wide and deep"


class Disk:
    """The filesystem under `root`: as it is, read-only, or full (for `saves` more writes with
    bytes, then free again; None: for good)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fault: int | None = None
        self.saves: int | None = None
        self.failed = 0

    def read_only(self) -> None:
        self.fault = errno.EROFS

    def full(self, saves: int | None = None) -> None:
        self.fault, self.saves = errno.ENOSPC, saves

    def refuses(self, path: Path, data: str) -> int | None:
        if self.fault is None or not path.is_relative_to(self.root):
            return None
        if self.fault == errno.ENOSPC:
            if not data:
                return None
            if self.saves is not None and self.failed >= self.saves:
                return None
        self.failed += 1
        return self.fault

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())


@pytest.fixture
def disk(tmp_path, monkeypatch) -> Disk:
    root = tmp_path / "disk"
    root.mkdir()
    disk = Disk(root)
    write_text = Path.write_text

    def faulty(self: Path, data: str, *args, **kwargs) -> int:
        fault = disk.refuses(self, data)
        if fault == errno.ENOSPC:
            write_text(self, "")  # the file is made, its bytes are not
        if fault is not None:
            raise OSError(fault, os.strerror(fault), str(self))
        return write_text(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", faulty)
    return disk


def ended(monkeypatch, capsys, command: str, *argv: str) -> tuple[int, str, list[str]]:
    """`python -m runner.<command> ARGV...` in this process: exit status, stdout, stderr's lines."""
    monkeypatch.setattr(sys, "argv", [f"runner.{command}", *argv])
    with pytest.raises(SystemExit) as exit_:
        importlib.import_module(f"runner.{command}").main()
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return exit_.value.code, out.out, out.err.strip().splitlines()


def bench(fake: FakeOpenAI, results: Path, *extra: str) -> list[str]:
    return ["--no-aws", "--local", "never", "--endpoint", f"fake={fake.url}", "--results-dir", str(results), *extra]


def ask(fake: FakeOpenAI, results: Path) -> list[str]:
    return ["fake", "How deep is the ocean?", "--no-aws", "--local", "never", "--endpoint", f"fake={fake.url}",
            "--results-dir", str(results)]  # fmt: skip


def refusal(folder: Path, why: str) -> str:
    return f"error: evidence cannot be written in {folder}: {why} (--results-dir names another folder)"


@pytest.mark.parametrize("command", ["bench", "ask", "cost"])
def test_a_results_folder_that_is_a_file_is_refused_before_anything_runs(monkeypatch, capsys, tmp_path, command):
    taken = tmp_path / "results"
    taken.write_text("not a folder")
    with FakeOpenAI([text(OCEAN)]) as fake:
        argv = {
            "bench": bench(fake, taken),
            "ask": ask(fake, taken),
            "cost": ["--offline", "--results-dir", str(taken)],
        }
        code, _, lines = ended(monkeypatch, capsys, command, *argv[command])
    assert (code, lines[-1:]) == (2, [refusal(taken, f"{taken} is a file, not a folder")])
    assert fake.requests == [] and taken.read_text() == "not a folder"


@pytest.mark.parametrize("command", ["bench", "ask", "cost"])
def test_a_read_only_results_folder_is_refused_before_anything_runs(monkeypatch, capsys, disk, command):
    results = disk.root / "results"
    disk.read_only()
    with FakeOpenAI([text(OCEAN)]) as fake:
        argv = {"bench": bench(fake, results), "ask": ask(fake, results), "cost": ["--offline", "--results-dir", str(results)]}  # fmt: skip
        code, _, lines = ended(monkeypatch, capsys, command, *argv[command])
    assert (code, lines) == (2, [refusal(results, f"{disk.root}: Read-only file system")])
    assert fake.requests == [] and disk.files() == []


def test_a_full_disk_measures_every_request_says_so_once_and_exits_1(monkeypatch, capsys, disk):
    disk.full()
    with FakeOpenAI([text(OCEAN)]) as fake:
        code, out, lines = ended(monkeypatch, capsys, "bench", *bench(fake, disk.root, "--repeats", "6"))
    assert code == 1
    assert len(fake.requests) == 1 + 6  # the warm-up, then every timed request: none was given up
    assert "6/6" in out  # the table, from what was measured
    said = [line for line in lines if "could not be written" in line]
    assert len(said) == 2, lines  # once when it first failed, once at the end
    assert said[0].startswith("error: evidence ") and "(No space left on device); measuring goes on" in said[0]
    assert said[1].endswith("(No space left on device): what was measured is shown above, not kept")
    assert disk.files() == []  # no partial file, no half evidence


def test_a_disk_that_frees_up_keeps_every_record_in_the_evidence(monkeypatch, capsys, disk):
    disk.full(saves=3)  # the first three saves fail, then there is room again
    with FakeOpenAI([text(OCEAN)]) as fake:
        code, out, lines = ended(monkeypatch, capsys, "bench", *bench(fake, disk.root, "--repeats", "6"))
    assert code == 0 and disk.failed == 3
    assert len([line for line in lines if "could not be written" in line]) == 1
    (path,) = disk.root.glob("*/bench-*.json")
    assert out.strip().endswith(f"evidence: {path}")
    records = json.loads(path.read_text())["records"]
    assert [(r["run"], r["ok"]) for r in records] == [(run, True) for run in range(1, 7)]
    assert [str(path.relative_to(disk.root))] == disk.files()


def test_ask_on_a_full_disk_keeps_the_answer_on_the_terminal(monkeypatch, capsys, disk):
    disk.full()
    with FakeOpenAI([text(OCEAN)]) as fake:
        code, out, lines = ended(monkeypatch, capsys, "ask", *ask(fake, disk.root))
    assert code == 1 and len(fake.requests) == 1
    assert out.strip() == OCEAN
    assert lines[-1].startswith("error: evidence ") and lines[-1].endswith("shown above, not kept")
    assert disk.files() == []


def bench_file(folder: Path) -> Path:
    evidence: Evidence[BenchFile] = Evidence(BenchFile, {}, folder)
    evidence.file.backends = [BackendEntry("g6", kind="openai", raw={"name": "g6", "kind": "openai"})]
    evidence.add_record(RequestRecord("g6", 1, ok=True, ttft_s=0.1, e2e_s=1.0, output_tokens=10))
    return evidence.finish()


def test_a_page_aimed_at_a_folder_is_one_line_before_anything_is_written(monkeypatch, capsys, tmp_path):
    source = bench_file(tmp_path / "results")
    folder = tmp_path / "pages"
    folder.mkdir()
    code, out, lines = ended(monkeypatch, capsys, "report", str(source), "--html", str(folder))
    assert (code, out, lines) == (2, "", [f"error: --html {folder} is a folder: give a file name in it"])
    assert list(folder.iterdir()) == []


def test_a_page_on_a_read_only_or_full_disk_is_one_line_and_no_partial(monkeypatch, capsys, disk, tmp_path):
    source = bench_file(tmp_path / "results")
    page = disk.root / "report.html"
    disk.read_only()
    code, _, lines = ended(monkeypatch, capsys, "report", str(source), "--html", str(page))
    assert (code, lines) == (2, [f"error: --html {page} cannot be written: {disk.root}: Read-only file system"])
    disk.full()
    code, _, lines = ended(monkeypatch, capsys, "report", str(source), "--markdown", str(page))
    assert (code, lines) == (1, [f"error: --markdown {page} could not be written (No space left on device)"])
    assert disk.files() == []


def test_evidence_and_pages_are_readable_by_their_owner_alone_whatever_the_umask(tmp_path):
    """Evidence names the account's servers, endpoints and instances and keeps every answer."""
    import os
    import stat

    from runner.core.files import write_atomically

    before = os.umask(0o022)  # the usual umask, which would leave the file readable by all
    try:
        written = write_atomically(tmp_path / "bench-1.json", "{}\n")
        written_again = write_atomically(written, "{}\n")  # replacing one keeps it so
    finally:
        os.umask(before)
    assert stat.S_IMODE(written_again.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["bench-1.json"]
