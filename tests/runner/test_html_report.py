"""runner.report --html: one self-contained page with the plots and every table, opened in the
system's headless Chromium (no console errors, every plot decoded); --markdown: the same tables."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from runner import bench, report
from tests.runner.fake_openai import FakeOpenAI, Step

CHROMIUM = shutil.which("chromium")
WORDS = " ".join(f"w{i}" for i in range(20))


def browse(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """The page's DOM after load, and the console lines Chromium logged."""
    result = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


def images(dom: str) -> tuple[int, int]:
    body = re.search(r"<body[^>]*>", dom).group(0)
    return int(re.search(r'data-images="(\d+)"', body).group(1)), int(
        re.search(r'data-images-decoded="(\d+)"', body).group(1)
    )


@pytest.fixture(scope="module")
def evidence_files(tmp_path_factory) -> list[Path]:
    """Two sweeps of a scripted server (1 and 4 at a time), priced as a deployed g6."""
    root = tmp_path_factory.mktemp("evidence")
    paths = []
    for run in ("a", "b"):
        step = Step(kind="text", text=WORDS, words_per_chunk=2, gap_s=0.005, usage_tokens=20)
        with FakeOpenAI([step]) as server:
            code = bench.run(
                ["--no-aws", "--local", "never", "--concurrency", "1,4", "--requests", "8", "--results-dir", str(root / run),
                 "--endpoint", f"g6={server.url}"]
            )  # fmt: skip
        assert code == 0
        (path,) = (root / run).glob("*/bench-*.json")
        data = json.loads(path.read_text())
        # As the stack output of a deployed g6 would describe it: billed by the hour in us-east-1.
        data["backends"][0] |= {"kind": "ec2-vllm", "region": "us-east-1"}
        path.write_text(json.dumps(data))
        paths.append(path)
    return paths


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (make test installs the system's package)")
def test_the_page_opens_in_chromium_with_every_plot_and_table(evidence_files, tmp_path):
    page = tmp_path / "report.html"
    assert report.run([*map(str, evidence_files), "--html", str(page)]) == 0
    text = page.read_text()
    # Self-contained: nothing fetched from anywhere.
    assert not re.search(r'(src|href)="(https?:|//)', text)
    dom, console = browse(page, tmp_path)
    assert console == []
    for plot in ("throughput", "latency", "cost", "run-to-run", "roofline"):
        assert f'id="plot-{plot}"' in dom
    assert images(dom) == (5, 5)
    assert dom.count("bench sweep") == 2 and "4 at a time" in dom and "TTFT ms p50/p90/p99" in dom


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (make test installs the system's package)")
def test_the_browser_check_catches_a_broken_plot_and_a_script_error(evidence_files, tmp_path):
    page = tmp_path / "broken.html"
    report.run([str(evidence_files[0]), "--html", str(page)])
    text = re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,AAAA", page.read_text(), count=1)
    page.write_text(text.replace("</body>", "<script>noSuchFunction();</script></body>"))
    dom, console = browse(page, tmp_path)
    total, decoded = images(dom)
    assert decoded == total - 1
    assert any("Uncaught ReferenceError: noSuchFunction" in line for line in console)


def test_markdown_holds_every_table(evidence_files, tmp_path):
    target = tmp_path / "report.md"
    assert report.run([*map(str, evidence_files), "--markdown", str(target)]) == 0
    text = target.read_text()
    assert text.count("## bench: bench-") == 2 and text.count("```text") == 2
    assert "1 at a time" in text and "4 at a time" in text
