"""runner.report --html: a page a person reads in thirty seconds (a headline per backend and model,
the plots, every table as an HTML table), checked in the system's headless Chromium at 1280 and
1920 px wide: no horizontal overflow, every image decoded, no console message of any level, and
screenshots kept (the first screen at each width and the whole page at 1280, under the test's
tmp_path, their paths recorded with record_property and printed). In CI (`CI` set, as CI services
set it) a missing Chromium fails these tests; elsewhere they skip. The plots are checked apart for
text that overlaps or is cut; --markdown holds the headline and the same tables; evidence of a
command the page does not take is one line, exit 2, nothing written. The headline names the file
each figure comes from; run to run compares every bench file measured one at a time; the goodput
plot names its lines; the latency distribution and the timeline are drawn from the records; every
failed request is a row of its own.

The evidence is the real commands' own: bench against scripted servers (a sweep of two backends at
1 and 4 streams, and five known backends once each), cost from `runner.cost --offline`; a sweep of
six backends at eight levels is made from a real bench record as template (the same fields), with
long model names; quality evidence, whose command another module writes, in the shape it writes."""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import warnings
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from runner import bench, cost, report
from runner.core.evidence import SCHEMA, read_file
from runner.core.typed_json import to_json
from runner.figures.capacity import CapacityFound, Tried
from runner.figures.fleet import CopyCount, FleetCopies
from runner.figures.scale_out import FromZeroRun, Sample, StepLoad
from runner.render.plots import PLOTS
from tests.runner.fake_openai import FakeOpenAI, Step
from tests.runner.known_server import known as known_rate
from tests.runner.known_server import known_server

CHROMIUM = shutil.which("chromium")
WORDS = " ".join(f"w{i}" for i in range(20))
WIDTHS = (1280, 1920)
LEVELS = (1, 2, 4, 8, 16, 32, 64, 128)
TOKENS = 40  # output tokens of each request of the many-level sweep
# Per backend of the many-level sweep: single-stream tok/s, the streams where it stops growing, TTFT s.
SPEEDS = {
    "g6": (31.0, 16, 0.045),
    "g5g": (18.5, 8, 0.090),
    "inf2": (44.0, 32, 0.060),
    "trn1": (41.0, 64, 0.055),
    "sagemaker": (30.0, 16, 0.120),
    "local": (66.0, 2, 0.030),
}
MODELS = {
    "g6": "Qwen/Qwen2.5-1.5B-Instruct (bf16) [open]",
    "g5g": "Qwen/Qwen2.5-1.5B-Instruct (fp16, sm_75 patch) [open]",
    "inf2": "Qwen/Qwen2.5-1.5B-Instruct (bf16, Neuron SDK 2.x tensor parallel 2) [open]",
    "trn1": "Qwen/Qwen2.5-1.5B-Instruct (bf16, Neuron) [open]",
    "sagemaker": "Qwen/Qwen2.5-1.5B-Instruct (bf16, SageMaker LMI) [open]",
}
# Accuracy per backend (items right of 100); local (the embedded model) is left out on purpose.
RIGHT = {"g6": 68, "g5g": 61, "inf2": 66, "trn1": 67, "sagemaker": 65}

# The many-level sweep's failures: every 16th request of trn1 at 128 streams, refused by the server.
FAILING = ("trn1", 128)
FAILED = {"ok": False, "error": "HTTP 503: the server is overloaded", "e2e_s": None, "output_tokens": None,
          "tokens_per_s": None, "decode_tokens_per_s": None}  # fmt: skip

# Failed requests of the many-level sweep (every 16th of trn1's 128 at 128 streams).
FAILURES = 128 // 16

IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def need_chromium(chromium: str | None = CHROMIUM, in_ci: bool = IN_CI) -> str:
    """The browser, or: in CI a failure (the check must run there), elsewhere a skip."""
    if chromium:
        return chromium
    reason = "no chromium here (make test installs the system's package: scripts/setup_browser.sh)"
    if in_ci:
        pytest.fail(f"CI: {reason}; the report's browser checks cannot be skipped in CI")
    pytest.skip(reason)


def test_a_missing_chromium_fails_in_ci_and_skips_elsewhere():
    with pytest.raises(pytest.fail.Exception, match="cannot be skipped in CI"):
        need_chromium(None, in_ci=True)
    with pytest.raises(pytest.skip.Exception):
        need_chromium(None, in_ci=False)
    assert need_chromium("/usr/bin/chromium", in_ci=True) == "/usr/bin/chromium"


# What the browser reports about the page once every image has been decoded (or failed to): put
# into a copy of the page, so the page itself carries no script.
#
# Chromium's virtual time (--virtual-time-budget) runs ahead whenever the page's main thread is
# idle, and images decode off that thread: without work on it, the DOM was dumped before decode()
# settled in about half the runs. So the probe keeps the main thread busy in short slices (at most
# MAX_SPINS) until every decode() has resolved or rejected.
MAX_SPINS = 2000
PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images), settled = false, spins = 0;
  (function spin() {
    if (settled || spins++ > MAX_SPINS) return;
    for (var i = 0, x = 0; i < 2e6; i++) { x += i; }
    setTimeout(spin, 0);
  })();
  Promise.all(images.map(function (image) {
    return image.decode().then(function () { return image.naturalWidth > 0; }, function () { return false; });
  })).then(function (decoded) {
    settled = true;
    var root = document.documentElement, body = document.body.dataset;
    var wide = Array.prototype.slice.call(document.querySelectorAll("body *")).filter(function (e) {
      return e.getBoundingClientRect().right > root.clientWidth + 0.5 && !e.closest(".table-wrap");
    }).slice(0, 5).map(function (e) { return e.tagName + "." + e.className; });
    var boxes = Array.prototype.slice.call(document.querySelectorAll(".table-wrap"));
    body.images = images.length;
    body.imagesDecoded = decoded.filter(Boolean).length;
    body.scrollWidth = root.scrollWidth;
    body.clientWidth = root.clientWidth;
    body.innerWidth = window.innerWidth;
    body.scrollHeight = root.scrollHeight;
    body.overflowing = wide.join(" ");
    body.headlineScrolls = String(boxes.filter(function (b) { return b.id === "headline-table"; })
      .some(function (b) { return b.scrollWidth > b.clientWidth; }));
    body.boxesScrolling = boxes.filter(function (b) { return b.scrollWidth > b.clientWidth; }).length;
    body.failedRows = document.querySelectorAll("#failures tbody tr").length;
    body.sourceLines = document.querySelectorAll("#headline-sources li").length;
    var timeline = document.querySelector("#plot-timeline img");
    body.timelineWidth = timeline ? Math.round(timeline.getBoundingClientRect().width) : 0;
    var scaleOut = document.querySelector("#plot-scale-out img");
    body.scaleOutWidth = scaleOut ? Math.round(scaleOut.getBoundingClientRect().width) : 0;
    body.mainWidth = Math.round(document.querySelector("main").clientWidth);
    body.probe = "done";
  });
});
</script>""".replace("MAX_SPINS", str(MAX_SPINS))


def browse(
    page: Path, tmp_path: Path, width: int, height: int = 900, screenshot: Path | None = None, scrollbars: bool = True
):
    """The body's probe figures after load, and every console line Chromium logged (any level).
    Without `scrollbars` (a whole-page screenshot in a window as tall as the page) none is drawn."""
    probed = page.with_name(page.stem + ".probed.html")
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    result = subprocess.run(
        [
            need_chromium(),
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
            f"--window-size={width},{height}",
            "--virtual-time-budget=5000",
            *([f"--screenshot={screenshot}"] if screenshot else []),
            *([] if scrollbars else ["--hide-scrollbars"]),
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    body = re.search(r"<body[^>]*>", result.stdout).group(0)
    figures = {
        key.replace("-", ""): html_unescape(value) for key, value in re.findall(r'data-([a-z-]+)="([^"]*)"', body)
    }
    assert figures.get("probe") == "done", body
    return figures, [line for line in result.stderr.splitlines() if ":CONSOLE" in line]


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)


# -- evidence, as the commands write it --------------------------------------------------------


def bench_run(root: Path, endpoints: dict[str, str], *args: str) -> Path:
    code = bench.run(
        ["--no-aws", "--local", "never", "--results-dir", str(root), *args]
        + [f"--endpoint={name}={url}" for name, url in endpoints.items()]
    )
    assert code == 0
    (path,) = root.glob("*/bench-*.json")
    return path


def wilson(right: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    share = right / total
    centre = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z / (1 + z * z / total) * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    return centre - half, centre + half


def many_levels(template: dict, path: Path, read: dict) -> Path:
    """A sweep of six backends at eight levels, each record a copy of a real bench record with its
    figures replaced: the same fields as bench writes, in a shape made to look like real servers
    (throughput grows until a knee, then TTFT grows with the queue); each level's readings a copy
    of a real sweep level's (`read`)."""
    data = copy.deepcopy(template)
    record = next(r for r in template["records"] if r["ok"])
    by_name = {b["name"]: b for b in template["backends"]}
    local = copy.deepcopy(by_name["g6"]) | {
        "name": "local",
        "kind": "local",
        "source": "embedded",
        "model_id": "gemma-3-270m-q4_k_m",
        "model_label": None,
        "catalog": None,
    }
    data["backends"] = [by_name[name] | {"model_label": MODELS[name]} for name in MODELS] + [local]
    data["config"]["levels"] = [
        {"mode": "concurrency", "value": n, "requests": max(4, n), "max_concurrency": None, "label": f"{n} at a time"}
        for n in LEVELS
    ]
    data["records"] = []
    data["warm_up"] = []
    at = datetime.fromisoformat(record["started_at"])  # each request stamped when it was sent
    for backend, (rate, knee, ttft) in SPEEDS.items():
        for level in data["config"]["levels"]:
            streams = level["value"]
            slowdown = max(1.0, streams / knee)
            level_end = 0.0
            for index in range(level["requests"]):
                first = ttft * slowdown**1.5 * (1 + 0.1 * (index % 3))
                e2e = first + TOKENS / rate * slowdown * (1 + 0.05 * (index % 4))
                sent = (index // streams) * e2e
                level_end = max(level_end, sent + e2e)
                data["records"].append(
                    record
                    | {
                        "backend": backend,
                        "run": index + 1,
                        "level": level,
                        "ttft_s": first,
                        "e2e_s": e2e,
                        "output_tokens": TOKENS,
                        "sent_s": sent,
                        "started_at": (at + timedelta(seconds=sent)).isoformat(timespec="milliseconds"),
                        "tokens_per_s": TOKENS / e2e,
                        "decode_tokens_per_s": (TOKENS - 1) / (e2e - first),
                        "chunk_times": [first + i * (e2e - first) / (TOKENS - 1) for i in range(TOKENS)],
                        "chunk_token_counts": None,
                    }
                    | (FAILED if (backend, streams) == FAILING and index % 16 == 15 else {})
                )
            at += timedelta(seconds=level_end)
    data["levels"] = [
        read | {"backend": backend, "label": level["label"], "level": level}
        for backend in SPEEDS
        for level in data["config"]["levels"]
    ]
    target = path.with_name("bench-many-levels.json")
    target.write_text(json.dumps(data))
    return target


def quality_evidence(path: Path, bench_data: dict) -> Path:
    """Quality evidence as runner.quality writes it: per backend and model, overall and per task
    family, correct of total, accuracy and its 95 % Wilson interval."""
    summary = []
    for backend, right in RIGHT.items():
        families = {}
        for family, share in (("counting", 0.8), ("arithmetic", 0.7), ("extraction", 0.6), ("tool-use", 0.5)):
            correct = round(25 * share * right / 68)
            low, high = wilson(correct, 25)
            families[family] = {
                "correct": correct,
                "total": 25,
                "accuracy": correct / 25,
                "low": low,
                "high": high,
                "errors": 0,
            }
        low, high = wilson(right, 100)
        summary.append(
            {
                "backend": backend,
                "model": MODELS[backend],
                "overall": {
                    "correct": right,
                    "total": 100,
                    "accuracy": right / 100,
                    "low": low,
                    "high": high,
                    "errors": 0,
                },
                "families": families,
            }
        )
    data = {
        "schema": SCHEMA,
        "command": "quality",
        "argv": ["--items", "100"],
        "config": {"items": 100, "seed": 0},
        "started_at": bench_data["started_at"],
        "finished_at": bench_data["finished_at"],
        "interrupted": False,
        "git": bench_data["git"],
        "versions": bench_data["versions"],
        "host": bench_data["host"],
        "emulated": None,
        "backends": [b for b in bench_data["backends"] if b["name"] in RIGHT],
        "stack_outputs": None,
        "notices": [],
        "records": [],
        "summary": summary,
    }
    target = path / "quality-000000-000.json"
    target.write_text(json.dumps(data))
    return target


@pytest.fixture(scope="module")
def evidence(tmp_path_factory) -> dict[str, Path]:
    """Real bench runs (a sweep of g6 and inf2 at 1 and 4 streams; five known backends once each
    for their evidence entries), a sweep of six backends at eight levels from them, its cost
    evidence from runner.cost --offline, and quality evidence."""
    root = tmp_path_factory.mktemp("evidence")
    fast = Step(kind="text", text=WORDS, words_per_chunk=2, gap_s=0.002, usage_tokens=20)
    slow = Step(kind="text", text=WORDS, words_per_chunk=2, gap_s=0.004, usage_tokens=20)
    with FakeOpenAI([fast]) as one, FakeOpenAI([slow]) as two:
        sweep = bench_run(root / "sweep", {"g6": one.url, "inf2": two.url}, "--concurrency", "1,4", "--requests", "8")
        known = bench_run(root / "known", {name: one.url for name in MODELS}, "--repeats", "1")
    many = many_levels(json.loads(known.read_text()), known, json.loads(sweep.read_text())["levels"][0])
    assert cost.run([str(many), "--offline", "--results-dir", str(root / "cost")]) == 0
    (priced,) = (root / "cost").glob("*/cost-*.json")
    quality = quality_evidence(root, json.loads(many.read_text()))
    # A workload: a prompt-length sweep and a capacity search within a TTFT objective, on two
    # known-rate servers of different prefill rates (g6 the faster).
    # A token every 5 ms (g6) and 10 ms (inf2), stretched by 0.3 and 0.7 for each other stream: within
    # tpot:16, g6 carries 4 at a time (9.5 ms) and inf2 one or two (10 ms, then 17 ms); the margins
    # are milliseconds a token, so a loaded machine's scheduling does not decide the order.
    with known_server(ttft=0.005, rate=200.0, tokens=200, prefill_rate=40_000.0, slowdown=0.3) as fast_server, \
            known_server(ttft=0.005, rate=100.0, tokens=200, prefill_rate=10_000.0, slowdown=0.7) as slow_server:  # fmt: skip
        workload = bench_run(
            root / "workload", {"g6": f"{fast_server.url}/v1,model={known_rate.MODEL}",
                                "inf2": f"{slow_server.url}/v1,model={known_rate.MODEL}"},
            "--input-tokens", "100,400", "--output-tokens", "16", "--goodput", "tpot:16", "--find-capacity",
            "--capacity-levels", "3", "--requests", "6", "--repeats", "3",
        )  # fmt: skip
    return {"sweep": sweep, "known": known, "many": many, "cost": priced, "quality": quality, "workload": workload}


# -- a fleet's evidence (bench --copies 1,2,4 --find-capacity) ---------------------------------------
#
# Made from the real workload run's evidence as template (its records' fields, its objectives): one
# file per routing of one inference component, "fleet", with a shared prefix of 450 tokens at input
# lengths 500 (90 % shared) and 900 (50 %). The streams each routing's fleet carries within the
# objectives at each copy count are set here; prefix-aware routing's 4 copies were refused (marked).
ROUTES = ("LEAST_OUTSTANDING_REQUESTS", "PREFIX_AWARE")
PREFIX = 450
SHARES = {500: 0.9, 900: 0.5}
CARRIED = {
    ("LEAST_OUTSTANDING_REQUESTS", 500): {1: 4, 2: 7, 4: 13},
    ("LEAST_OUTSTANDING_REQUESTS", 900): {1: 3, 2: 6, 4: 11},
    ("PREFIX_AWARE", 500): {1: 4, 2: 8, 4: None},
    ("PREFIX_AWARE", 900): {1: 3, 2: 6, 4: None},
}
REFUSED = "4 copies refused: ValidationException: CopyCount 4 needs 4 accelerators"
# Each level's requests, and their service time (s): TTFT base per routing and share, stretched by
# how far the level is past what the fleet carries.
FLEET_REQUESTS = 12
SERVICE_S = 0.5
BASE_TTFT = {("LEAST_OUTSTANDING_REQUESTS", 500): 0.20, ("LEAST_OUTSTANDING_REQUESTS", 900): 0.12,
             ("PREFIX_AWARE", 500): 0.06, ("PREFIX_AWARE", 900): 0.09}  # fmt: skip


def tried_levels(carried: int) -> list[int]:
    """The search's levels: from 2, the capacity (met) and one more (missed)."""
    return sorted({2, carried, carried + 1})


def fleet_ttfts(route: str, length: int, copies: int, value: int) -> list[float]:
    carried = CARRIED[(route, length)][copies] or 1
    stretch = max(1.0, value / carried)
    return [BASE_TTFT[(route, length)] * stretch * (1 + 0.05 * i) for i in range(FLEET_REQUESTS)]


def fleet_met(carried: int, value: int) -> int:
    """Requests of a level within the objectives: all where the fleet carries the load, else its share."""
    return FLEET_REQUESTS if value <= carried else FLEET_REQUESTS * carried // value


def fleet_duration(value: int) -> float:
    """A closed-loop level's wall time: `value` requests in flight, each SERVICE_S long, so one sent
    every SERVICE_S / value; from the first sent to the last done."""
    return ((FLEET_REQUESTS - 1) / value + 1) * SERVICE_S


def fleet_file(template: dict, route: str, at: datetime, target: Path) -> Path:
    data = copy.deepcopy(template)
    record = next(r for r in template["records"] if r["ok"])
    data["started_at"] = at.isoformat(timespec="milliseconds")
    data["backends"] = [next(b for b in template["backends"] if b["name"] == "g6") | {"name": "fleet"}]
    for key in ("capacity", "levels", "workload_backends"):
        data.pop(key, None)
    data["config"]["workload"] |= {"input_tokens": list(SHARES), "prefix_tokens": PREFIX}
    data["config"]["copies"] = [1, 2, 4]
    data["warm_up"], data["records"] = [], []
    fleet = FleetCopies("fleet", "inference-fleet", "inference-fleet-model", route, copies_before=1)
    for length, share in SHARES.items():
        one = CARRIED[(route, length)][1]
        for copies, carried in CARRIED[(route, length)].items():
            if carried is None:
                fleet.counts.append(CopyCount(copies, share, input_tokens=length, marked=REFUSED))
                continue
            tried = []
            for value in tried_levels(carried):
                label = f"{copies} {'copy' if copies == 1 else 'copies'}, {length} in, {value} at a time"
                level = {"mode": "concurrency", "value": value, "requests": FLEET_REQUESTS, "max_concurrency": None,
                         "input_tokens": length, "label": label}  # fmt: skip
                met = fleet_met(carried, value)
                for index, ttft in enumerate(fleet_ttfts(route, length, copies, value)):
                    sent = index * SERVICE_S / value
                    data["records"].append(
                        record
                        | {
                            "backend": "fleet",
                            "run": index + 1,
                            "level": level,
                            "ttft_s": ttft,
                            "e2e_s": SERVICE_S,
                            "sent_s": sent,
                            "prompt_tokens": length,
                            "target_input_tokens": length,
                            "slo": {"met": index < met, "missed": [] if index < met else ["tpot"]},
                            "started_at": (at + timedelta(seconds=sent)).isoformat(timespec="milliseconds"),
                            "chunk_times": [ttft + i * (SERVICE_S - ttft) / 3 for i in range(4)],
                            "chunk_token_counts": None,
                            "cold_start": False,
                        }
                    )
                rate = FLEET_REQUESTS / fleet_duration(value)
                tried.append(Tried(value, met == FLEET_REQUESTS, met / FLEET_REQUESTS, None, rate,
                                   met / fleet_duration(value)))  # fmt: skip
            label = f"{copies} {'copy' if copies == 1 else 'copies'}, {length} in, {carried} at a time"
            found = CapacityFound("fleet", length, label, "concurrency", 0.9, carried,
                                  f"between {carried} (met) and {carried + 1} (missed)", tuple(tried))  # fmt: skip
            fleet.counts.append(
                CopyCount(
                    copies,
                    share,
                    input_tokens=length,
                    capacity=found,
                    efficiency=round(carried / (copies * one), 3),
                    ideal=copies * one,
                )
            )
    fleet.restored = "set back to 1 copy, as it was before the run"
    data["fleet"] = [to_json(fleet)]
    target.write_text(json.dumps(data))
    read_file(target)  # reads back as bench evidence
    return target


@pytest.fixture(scope="module")
def fleet(evidence) -> dict[str, Path]:
    """The fleet under each routing, a file apiece, least outstanding requests measured first."""
    template = json.loads(evidence["workload"].read_text())
    at = datetime.fromisoformat(template["started_at"])
    return {
        route: fleet_file(
            template, route, at + timedelta(minutes=10 * n), evidence["workload"].with_name(f"bench-fleet-{n}.json")
        )
        for n, route in enumerate(ROUTES)
    }


# -- an inference component's scaling (bench --step-load 2,8 --goodput ttft:500, --from-zero 3) ------
#
# Constructed: per step, its samples (at s, copies, in flight, first tokens, TTFT p95 s). "fleet"
# steps 2 -> 8 at 30 s and catches up (its copies 1, 2, then 4; the look at 70 s failed; at 50 s
# requests were in flight and no first token came); "fleet-b" steps 1 -> 4 at 20 s and never
# catches up within its 40 s.
SLO_S = 0.5
STEPS = {
    "fleet": (2, 8, 30.0, 90.0, [
        (10, 1, 2, 9, 0.20), (20, 1, 2, 10, 0.21), (30, 1, 2, 9, 0.22), (40, 1, 8, 6, 1.40), (50, 1, 8, 0, None),
        (60, 2, 8, 12, 0.90), (70, None, 8, 14, 0.70), (80, 4, 8, 20, 0.45), (90, 4, 8, 21, 0.60),
        (100, 4, 8, 24, 0.30), (110, 4, 8, 25, 0.31), (120, 4, 8, 24, 0.29),
    ]),
    "fleet-b": (1, 4, 20.0, 40.0, [
        (10, 1, 1, 5, 0.30), (20, 1, 1, 5, 0.31), (30, 1, 4, 6, 2.0), (40, 1, 4, 6, 2.5), (50, 1, 4, 5, 3.0),
        (60, 1, 4, 5, 3.5),
    ]),
}  # fmt: skip
FROM_ZERO_S = (95.0, 120.0, 101.5)  # the first token of each repeat from zero copies


def shaded(step_at: float, samples: list[tuple]) -> tuple[float, float, bool] | None:
    """The span the objective was missed after the step, from the samples: to the end of the last
    window that missed (over the objective, or in flight with no first token), and whether the
    copies caught up (the last window that says anything met); None when none missed."""
    after = [(at, p95 > SLO_S if p95 is not None else (True if flight else None)) for at, _, flight, _, p95 in samples
             if at > step_at]  # fmt: skip
    telling = [(at, miss) for at, miss in after if miss is not None]
    if telling[-1][1]:
        return step_at, after[-1][0], False
    misses = [at for at, miss in telling if miss]
    return (step_at, max(misses), True) if misses else None


@pytest.fixture(scope="module")
def step_load(evidence) -> Path:
    """A step-load run's evidence (no request records of its own) from the sweep's as template."""
    data = json.loads(evidence["sweep"].read_text())
    data["records"], data["warm_up"] = [], []
    data["backends"] = [b | {"name": name} for name, b in zip(STEPS, data["backends"], strict=False)]
    data["config"] |= {"slo": {"ttft_ms": SLO_S * 1000}, "scale_out": {"step": list(STEPS["fleet"][:2])}}
    data["step_load"] = [
        to_json(StepLoad(name, base, stepped, step_at, bound, 10.0, SLO_S,
                         tuple(Sample(float(at), *rest) for at, *rest in samples), 400, 0))
        for name, (base, stepped, step_at, bound, samples) in STEPS.items()
    ]  # fmt: skip
    data["from_zero"] = [
        to_json(FromZeroRun("fleet", n + 1, True, 30.0, 1, first - 5, first - 2, first))
        for n, first in enumerate(FROM_ZERO_S)
    ]
    target = evidence["sweep"].with_name("bench-step-load.json")
    target.write_text(json.dumps(data))
    read_file(target)  # reads back as bench evidence
    return target


@pytest.fixture(scope="module")
def page(evidence, fleet, step_load, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("page") / "report.html"
    files = [*(evidence[k] for k in ("many", "cost", "quality", "sweep", "workload")), *fleet.values(), step_load]
    assert report.run([*map(str, files), "--html", str(target)]) == 0
    return target


def test_the_many_level_sweep_has_the_fields_bench_writes(evidence):
    real = json.loads(evidence["sweep"].read_text())
    made = json.loads(evidence["many"].read_text())
    assert set(made["records"][0]) == set(real["records"][0])
    assert set(made) == set(real)


# -- the page in the browser -------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_fits_decodes_and_logs_nothing_at_each_width(page, tmp_path, width, record_property):
    # The first screen, as a person at this width sees it, is kept as the test's artifact.
    screenshot = tmp_path / f"report-{width}-first-screen.png"
    figures, console = browse(page, tmp_path, width, screenshot=screenshot)
    assert console == []
    assert int(figures["scrollwidth"]) <= int(figures["innerwidth"]), figures
    assert int(figures["scrollwidth"]) <= int(figures["clientwidth"]), figures  # no sideways scrollbar at all
    assert figures["overflowing"] == "", figures
    assert figures["headlinescrolls"] == "false", figures  # the headline fits without scrolling its box
    assert int(figures["images"]) == len(PLOTS) == 14 and figures["imagesdecoded"] == figures["images"], figures
    # The failures as a table of their own, where each figure comes from as a list under the headline,
    # and the run's timeline as wide as the page's column allows (its rows need the width).
    assert int(figures["failedrows"]) == FAILURES and int(figures["sourcelines"]) >= 3, figures
    assert int(figures["timelinewidth"]) > int(figures["mainwidth"]) * 0.6, figures
    assert int(figures["scaleoutwidth"]) > int(figures["mainwidth"]) * 0.6, figures
    assert screenshot.stat().st_size > 10_000
    record_property(f"screenshot-{width}", str(screenshot))
    record_property(f"tables-scrolling-in-their-box-{width}", figures["boxesscrolling"])
    print(f"screenshot at {width} px: {screenshot}")
    if width == WIDTHS[0]:
        # The whole page at the narrower width, in a window as tall as the page: the same checks hold.
        whole = tmp_path / f"report-{width}.png"
        full, console = browse(page, tmp_path, width, int(figures["scrollheight"]), screenshot=whole, scrollbars=False)
        assert console == [] and int(full["scrollwidth"]) <= int(full["clientwidth"]), full
        assert full["imagesdecoded"] == full["images"], full
        record_property(f"screenshot-{width}-whole-page", str(whole))
        print(f"whole page at {width} px: {whole}")


def test_the_browser_check_catches_a_broken_plot_a_script_error_and_overflow(page, tmp_path):
    broken = tmp_path / "broken.html"
    text = re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,AAAA", page.read_text(), count=1)
    broken.write_text(
        text.replace(
            "</main>",
            '<div style="width:3000px">wide</div></main><script>console.log("hello");noSuchFunction();</script>',
        )
    )
    figures, console = browse(broken, tmp_path, 1280)
    assert int(figures["imagesdecoded"]) == int(figures["images"]) - 1
    assert int(figures["scrollwidth"]) > int(figures["innerwidth"]) and "DIV" in figures["overflowing"]
    assert any('"hello"' in line for line in console)
    assert any("Uncaught ReferenceError: noSuchFunction" in line for line in console)


# -- what the page says ------------------------------------------------------------------------


def test_the_page_is_self_contained_and_says_what_it_was_rendered_from(page, evidence):
    text = page.read_text()
    assert not re.search(r'(src|href)="(https?:|//)', text) and "<script" not in text
    for name in ("many", "cost", "quality", "sweep"):
        assert evidence[name].name in text
    assert "Rendered from 8 evidence files (bench, cost, quality)" in text
    for plot in ("throughput", "latency", "distribution", "timeline", "cost", "accuracy", "run-to-run", "roofline",
                 "copies", "routing"):  # fmt: skip
        assert f'id="plot-{plot}"' in text
    # Tables as HTML tables, figures right-aligned; none as preformatted text.
    assert "<pre" not in text and text.count('<div class="table-wrap">') >= 4
    assert '<th scope="col" class="num">out tok/s</th>' in text and '<td class="num">' in text


def headline(text: str) -> list[list[str]]:
    table = re.search(r'<table class="headline">.*?</table>', text, re.S).group(0)
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S) for row in rows]


def plain(cell: str) -> str:
    return html_unescape(re.sub(r"<[^>]+>", " ", cell)).split()


def test_the_headline_is_sorted_in_code_with_the_best_marked_and_every_gap_explained(page):
    text = page.read_text()
    rows = headline(text)
    names = [plain(row[0])[0] for row in rows]
    rates = [float(plain(row[2])[0].replace(",", "")) if plain(row[2])[0] != "—" else None for row in rows]
    known = [r for r in rates if r is not None]
    assert known == sorted(known, reverse=True) and rates[: len(known)] == known  # tok/s, highest first
    assert "Sorted by tok/s of one stream, highest first" in text
    # The step-load run's components have no request of the headline's: no row (their own plot shows them).
    assert set(names) == {"local", "g6", "g5g", "inf2", "trn1", "sagemaker"}
    assert not set(STEPS) & set(names)
    table = re.search(r'<table class="headline">.*?</table>', text, re.S).group(0)
    # One best per column (five columns of figures), each marked; the two columns at the objectives'
    # best is g6 (the faster known server carries more within tpot:16), marked on each of its runs' rows.
    assert table.count('class="num best"') == table.count("★") == 5 + 2 * names.count("g6")
    best_accuracy = re.search(r'<td class="num best"[^>]*><span class="figure">68.0</span>', table)
    assert best_accuracy is not None
    # The embedded model is not billed and has no accuracy: "—" with the reason, on hover and below.
    local = rows[names.index("local")]
    assert plain(local[5])[0].startswith("—") and plain(local[6])[0].startswith("—")
    assert 'title="not in the quality evidence"' in table
    assert "not billed by AWS (embedded model on this machine)" in table
    assert re.search(r"not in the quality evidence — accuracy: [^<]*\blocal\b", text)
    # Long model names are kept whole.
    assert MODELS["inf2"] in html_unescape(text)
    # Accuracy with its interval and count; $ per M with where it came from.
    assert "68/100 right" in table and re.search(r"\d\d–\d\d %", table)
    assert "$ per M output from cost-" in html_unescape(text)
    # Figures priced for servers that are not AWS (scripted --endpoint servers) say so.
    assert "priced as AWS, but measured on: --endpoint server, not known to be AWS" in text


def test_the_plots_hold_no_overlapping_or_cut_text(evidence, fleet, step_load):
    """Every plot drawn for the page: each text inside the figure, no two texts overlapping, and
    no layout warning (constrained layout gave up)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from runner.render import plots

    paths = [*(evidence[k] for k in ("many", "cost", "quality", "sweep", "workload")), *fleet.values(), step_load]
    sources = [(path, read_file(path)) for path in paths]
    drawn = 0
    for name, (_, _, draw) in plots.PLOTS.items():
        with warnings.catch_warnings(), plots.style():
            warnings.simplefilter("error")
            figure = draw(sources)
            assert not isinstance(figure, str), f"{name}: {figure}"
            renderer = FigureCanvasAgg(figure).get_renderer()
            figure.draw(renderer)
        drawn += 1
        frame = figure.bbox
        boxes = []
        for text in figure.findobj(Text):
            if not text.get_visible() or not text.get_text().strip() or not shown(text, figure):
                continue
            box = text.get_window_extent(renderer)
            assert (
                box.x0 >= frame.x0 - 1 and box.y0 >= frame.y0 - 1 and box.x1 <= frame.x1 + 1 and box.y1 <= frame.y1 + 1
            ), f"{name}: {text.get_text()!r} is cut at the figure's edge"
            boxes.append((text.get_text(), box))
        for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
            if a == b and all(abs(p - q) <= 1 for p, q in zip(box_a.extents, box_b.extents, strict=True)):
                # The same label drawn twice in the same place (matplotlib keeps a tick's twin
                # now and then): one set of glyphs on the page, nothing for a reader to misread.
                continue
            overlap_x = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            overlap_y = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            assert overlap_x <= 1 or overlap_y <= 1, f"{name}: {a!r} overlaps {b!r}"
    assert drawn == len(plots.PLOTS) == 14


def shown(text, figure) -> bool:
    """A tick label counts only when drawn: matplotlib keeps spare ticks beyond the view, whose
    labels it never draws."""
    for axis in (axis for axes in figure.axes for axis in (axes.xaxis, axes.yaxis)):
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            if text is tick.label1 or text is tick.label2:
                low, high = sorted(axis.get_view_interval())
                span = (high - low) * 1e-6
                return low - span <= tick.get_loc() <= high + span
    return True


def test_markdown_holds_the_headline_and_every_table(evidence, tmp_path):
    target = tmp_path / "report.md"
    files = [evidence[k] for k in ("sweep", "cost", "quality")]
    assert report.run([*map(str, files), "--markdown", str(target)]) == 0
    text = target.read_text()
    assert "## Headline" in text and "| backend | model | tok/s, one stream |" in text
    assert text.count("```text") == 3 and "1 at a time" in text and "4 at a time" in text
    assert "accuracy per task family" in text or "quality" in text


def test_quality_evidence_prints_its_table_without_html(evidence, capsys):
    assert report.run([str(evidence["quality"])]) == 0
    out = capsys.readouterr().out
    assert "sagemaker" in out and "g5g" in out


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--html", "--markdown"])
def test_evidence_of_another_command_is_one_line_exit_2_and_nothing_written(
    evidence, tmp_path, monkeypatch, capsys, flag
):
    check = tmp_path / "sweep-000000-000.json"
    data = json.loads(evidence["sweep"].read_text()) | {"command": "sweep", "records": []}
    check.write_text(json.dumps(data))
    target = tmp_path / "report.out"
    monkeypatch.setattr(sys, "argv", ["runner.report", str(evidence["sweep"]), str(check), flag, str(target)])
    with pytest.raises(SystemExit) as exit_info:
        report.main()
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    lines = [line for line in (captured.err + captured.out).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ") and f"{check} is 'sweep' evidence" in lines[0]
    assert "takes bench, cost, quality evidence" in lines[0]
    assert "a survey's steps (up, check, ask, counting, orchestrator) beside its survey.json" in lines[0]
    assert not target.exists()


def test_the_headline_holds_each_backends_capacity_within_the_objectives(page, evidence):
    """Good requests/s at the most load within tpot:16 (the workload's capacity search), per backend,
    as the evidence measured it: g6 (slowdown 0.3 a stream) got further than inf2 (0.7)."""
    measured = {s["backend"]: s for s in json.loads(evidence["workload"].read_text())["capacity"]
                if s["input_tokens"] == 100}  # fmt: skip
    assert measured["g6"]["capacity"] > measured["inf2"]["capacity"] >= 1
    rows = headline(page.read_text())
    header = re.search(r"<thead>(.*?)</thead>", page.read_text(), re.S).group(1)
    columns = [plain(c) for c in re.findall(r"<th[^>]*>(.*?)</th>", header, re.S)]
    at = columns.index(["good", "req/s", "at", "SLO"])
    for row in rows:
        name = plain(row[0])[0]
        cell = plain(row[at])
        if name in measured:
            search = max(
                (s for s in json.loads(evidence["workload"].read_text())["capacity"] if s["backend"] == name),
                key=lambda s: s["input_tokens"],
            )  # the newest search of the backend: its last input length
            assert cell[0] == f"{search['at_capacity']['goodput_rps']:,.2f}" and cell[1] == "req/s", (name, cell)
            assert f"{search['capacity']:g} at a time" in " ".join(cell)
        else:
            assert cell[0].startswith("—"), (name, cell)


# -- where figures come from, run to run, the new plots, failures ---------------------------------


def test_the_headline_says_which_file_each_figure_comes_from(page, evidence):
    """The speed figures from the bench evidence, accuracy from the quality evidence, $ per million
    from the cost evidence, the capacity from the workload's: each named with the rows it gave."""
    text = html_unescape(page.read_text())
    lines = re.findall(
        r"<li><strong>(.*?)</strong>: (.*?)</li>", re.search(r'id="headline-sources">(.*?)</ul>', text, re.S).group(1)
    )
    where = {header: files for headers, files in lines for header in headers.split(" · ")}
    speed = where["TTFT"]
    assert f"{evidence['many'].name} (" in speed and "local" in speed.split(evidence["many"].name)[1]
    assert where["accuracy"].startswith(f"{evidence['quality'].name} (")
    assert evidence["cost"].name in where["$ per M output"]
    assert where["good req/s at SLO"].startswith(f"{evidence['workload'].name} (")
    # Several columns from the same files in the same rows are said once.
    assert any(
        headers.split(" · ")[:3] == ["tok/s, one stream", "peak tok/s, all streams", "TTFT"] for headers, _ in lines
    )


def test_run_to_run_compares_every_bench_file_measured_one_at_a_time(evidence):
    """Four bench files (the survey's prompt and a workload): four runs, not 'one bench evidence
    file'; a file alone says how many were given and why it cannot compare."""
    from runner.render import plots

    files = [(evidence[k], read_file(evidence[k])) for k in ("sweep", "workload", "known", "many")]
    with plots.style():
        figure = plots.run_to_run(files)
    assert not isinstance(figure, str), figure
    (axes,) = figure.axes
    assert len(axes.containers) == 4  # a group of bars per run
    ticks = [t.get_text() for t in axes.get_xticklabels()]
    assert "g6" in ticks and "g6\n100 in" in ticks  # the workload's one-at-a-time level beside the prompt's
    with plots.style():
        alone = plots.run_to_run([(evidence["workload"], read_file(evidence["workload"]))])
    assert alone.startswith("1 bench evidence file given, 1 of them with requests one at a time")


def test_the_goodput_plot_names_the_share_each_line_stands_for(evidence):
    from runner.render import plots

    with plots.style():
        figure = plots.goodput_against_load([(evidence["workload"], read_file(evidence["workload"]))])
    (legend,) = figure.legends
    assert "90% of requests asked to meet them" in [t.get_text() for t in legend.get_texts()]


def test_the_latency_distribution_is_each_backends_requests_as_a_cdf(evidence):
    """At each backend's lightest load, the share done within each time rises to every request:
    its last step at the slowest request the evidence holds."""
    from runner.render import plots

    data = read_file(evidence["sweep"])
    with plots.style():
        figure = plots.latency_distribution([(evidence["sweep"], data)])
    ttft_axes, e2e_axes = figure.axes
    for axes, figure_of in ((ttft_axes, lambda r: r.ttft_s * 1000), (e2e_axes, lambda r: r.e2e_s)):
        for line in axes.get_lines():
            backend = line.get_label()
            values = [figure_of(r) for r in data.records if r.backend == backend and r.label == "1 at a time" and r.ok]
            xs, ys = line.get_data()
            assert max(ys) == 1.0 and max(x for x in xs if math.isfinite(x)) == pytest.approx(max(values))
        assert {line.get_label() for line in axes.get_lines()} == {"g6", "inf2"}


def test_the_timeline_draws_each_request_from_its_send_to_its_end(evidence):
    from runner.render import plots

    data = read_file(evidence["sweep"])
    with plots.style():
        figure = plots.run_timeline([(evidence["sweep"], data)])
    (axes,) = figure.axes
    records = data.records
    starts = [datetime.fromisoformat(r.started_at) for r in records]
    zero = min(starts)
    ends = sorted(round((s - zero).total_seconds() + r.e2e_s, 6) for s, r in zip(starts, records, strict=True))
    # The streams are the opaque collections, one segment per request from its first token to its end.
    streams = [c for c in axes.collections if c.get_alpha() == 1.0]
    drawn = sorted(round(segment[1][0], 6) for c in streams for segment in c.get_segments())
    assert drawn == ends  # every request's end, one segment each
    waits = [c for c in axes.collections if c.get_alpha() == 0.35]
    firsts = sorted(round(segment[1][0], 6) for c in waits for segment in c.get_segments())
    assert firsts == sorted(
        round((s - zero).total_seconds() + r.ttft_s, 6) for s, r in zip(starts, records, strict=True)
    )  # and its wait, from its send to its first token
    assert [t.get_text() for t in axes.get_yticklabels()] == [
        "g6 · 1 at a time", "g6 · 4 at a time", "inf2 · 1 at a time", "inf2 · 4 at a time"
    ]  # fmt: skip


def test_the_page_lists_every_failed_request_with_its_error(page, evidence):
    text = page.read_text()
    section = re.search(r'<section id="failures">(.*?)</section>', text, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", section.split("<tbody>")[1], re.S)
    assert len(rows) == FAILURES
    assert all("trn1" in row and "128 at a time" in row and "HTTP 503: the server is overloaded" in row for row in rows)
    assert f"failed requests: {FAILURES}" in section


# -- a fleet: capacity against copies, routing by shared share, the fleet's headline line -----------


def test_one_at_a_time_is_a_level_of_one_stream_not_eleven_nor_a_fleets():
    from runner.render.plots import lightest

    assert lightest("1 at a time") and lightest("100 in, 1 at a time")
    assert not lightest("11 at a time") and not lightest("100 in, 21 at a time")
    assert not lightest("2 copies, 500 in, 1 at a time")  # a fleet's level: its own plots draw it


def test_capacity_against_copies_draws_each_count_its_ideal_line_and_its_efficiency(fleet):
    """Each routing and share's capacity at the copy counts measured, the ideal line N x capacity(1)
    through every count asked (the refused one too), the efficiency capacity(N) / (N x capacity(1))
    worked out here; the refused count is named in its legend entry, no point drawn for it."""
    from runner.render import plots

    sources = [(path, read_file(path)) for path in fleet.values()]
    with plots.style():
        figure = plots.capacity_against_copies(sources)
    assert not isinstance(figure, str), figure
    left, right = figure.axes
    (legend,) = figure.legends
    entries = [t.get_text().replace("\n", " ") for t in legend.get_texts()]
    drawn = {line.get_label(): line for line in left.get_lines() if not line.get_label().startswith("_")}
    for (route, length), carried in CARRIED.items():
        share = f"{SHARES[length]:.0%}"
        (name,) = [n for n in drawn if n.startswith(f"fleet, {route}, {share} shared, {length} in")]
        measured = {c: v for c, v in carried.items() if v is not None}
        xs, ys = drawn[name].get_data()
        assert dict(zip(xs, ys, strict=True)) == measured  # the refused count: no point, not zero
        colour = drawn[name].get_color()
        (ideal,) = [ln for ln in left.get_lines() if ln.get_linestyle() == "--" and ln.get_color() == colour]
        assert dict(zip(*ideal.get_data(), strict=True)) == {c: c * carried[1] for c in carried}
        (efficiency,) = [ln for ln in right.get_lines() if ln.get_color() == colour]
        assert dict(zip(*efficiency.get_data(), strict=True)) == pytest.approx(
            {c: round(v / (c * carried[1]), 3) * 100 for c, v in measured.items()}
        )
        refused = "; 4: not measured" in name
        assert refused == (carried[4] is None)
        assert any(e.startswith(f"fleet, {route}, {share} shared") for e in entries)
    assert "ideal: N × one copy's capacity" in entries
    assert [t.get_text() for t in left.get_xticklabels()] == ["1", "2", "4"]  # 4 measured under one routing


def test_goodput_by_routing_compares_at_the_largest_count_every_routing_measured(fleet):
    """Prefix-aware's 4 copies were refused, so the routings are compared at 2: good requests/s at
    each one's capacity with the Wilson interval of that level's share met, and TTFT p50 and p95 at
    the heaviest load both measured (8 at a time at 90 % shared), p50 with its order-statistic
    interval (12 requests: the 3rd and the 10th), p95 without (too few requests for its bounds)."""
    from runner.render import fleet as fleet_figures
    from runner.render import plots

    sources = [(path, read_file(path)) for path in fleet.values()]
    compared = fleet_figures.routing_comparison(sources)
    assert not isinstance(compared, str), compared
    assert compared.copies == 2
    # Of 12 requests, the ranks whose order statistics bound the median with >= 95 %: P(B <= 2) <= 0.025
    # and P(B <= 9) >= 0.975 for B ~ Binomial(12, 1/2).
    below = lambda k: sum(math.comb(12, i) for i in range(k + 1)) / 2**12  # noqa: E731
    assert below(2) <= 0.025 < below(3) and below(8) < 0.975 <= below(9)
    for point in compared.points:
        length = next(n for n, s in SHARES.items() if s == point.shared_share)
        carried = CARRIED[(point.routing, length)][2]
        duration = fleet_duration(carried)
        low, high = wilson(FLEET_REQUESTS, FLEET_REQUESTS)
        assert point.goodput.value == pytest.approx(FLEET_REQUESTS / duration)
        assert (point.goodput.low, point.goodput.high) == pytest.approx(
            (low * FLEET_REQUESTS / duration, high * FLEET_REQUESTS / duration)
        )
        both = set.intersection(*(set(tried_levels(CARRIED[(r, length)][2])) for r in ROUTES))
        assert point.ttft_at == f"2 copies, {length} in, {max(both)} at a time"
        ttfts = sorted(fleet_ttfts(point.routing, length, 2, max(both)))
        assert point.ttft_p50.value == pytest.approx((ttfts[5] + ttfts[6]) / 2)
        assert (point.ttft_p50.low, point.ttft_p50.high) == (ttfts[2], ttfts[9])
        assert point.ttft_p95.value == pytest.approx(ttfts[10] + (ttfts[11] - ttfts[10]) * 0.45)
        assert point.ttft_p95.low is None and point.ttft_p95.high is None
    with plots.style():
        figure = plots.goodput_by_routing(sources)
    left, _ = figure.axes
    # Prefix-aware carries more at 90 % shared, the same at 50 %: good requests/s as worked out here.
    lines = {line.get_color(): line for line in left.get_lines() if line.get_marker() == "o"}
    goodput = sorted(tuple(line.get_ydata()) for line in lines.values())
    expected = sorted(
        tuple(FLEET_REQUESTS / fleet_duration(CARRIED[(r, n)][2]) for n in sorted(SHARES, key=SHARES.get))
        for r in ROUTES
    )
    assert goodput == pytest.approx(expected)
    assert [t.get_text() for t in left.get_xticklabels()] == ["50 %", "90 %"]


def test_with_one_routing_the_routing_plot_says_which_are_missing(fleet):
    from runner.render import plots

    path = fleet["LEAST_OUTSTANDING_REQUESTS"]
    with plots.style():
        said = plots.goodput_by_routing([(path, read_file(path))])
    assert said == (
        f"only LEAST_OUTSTANDING_REQUESTS measured ({path.name}): give bench --copies evidence of the same fleet "
        "under another RoutingStrategy (PREFIX_AWARE, RANDOM) to compare routing"
    )
    with plots.style():
        assert plots.capacity_against_copies([]).startswith("no fleet evidence given")


def test_the_headline_gives_the_fleets_capacity_at_each_count_and_its_efficiency(page, fleet):
    """A row per routing and input length: the streams carried at each copy count with the efficiency
    worked out here under it; the refused count not measured, the evidence's reason on hover."""
    text = html_unescape(page.read_text())
    table = re.search(r'<table class="headline fleet">.*?</table>', text, re.S).group(0)
    rows = [re.findall(r"<t[hd]([^>]*)>(.*?)</t[hd]>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", table)]
    assert [" ".join(plain(c)) for _, c in rows[0]][4:] == ["1 copy", "2 copies", "4 copies"]
    assert len(rows[1:]) == len(CARRIED)
    for cells in rows[1:]:
        route, share, length = (plain(cells[i][1])[0] for i in (1, 2, 3))
        carried = CARRIED[(route, int(length))]
        assert share == f"{SHARES[int(length)]:.0%}"
        for (attributes, cell), copies in zip(cells[4:], (1, 2, 4), strict=True):
            if carried[copies] is None:
                assert " ".join(plain(cell)) == "— not measured" and f'title="not measured: {REFUSED}"' in attributes
                continue
            assert " ".join(plain(cell)) == (
                f"{carried[copies]} at a time {carried[copies] / (copies * carried[1]):.0%} of ideal"
            )
    from runner.render.page import render_markdown

    markdown = render_markdown([(path, read_file(path)) for path in fleet.values()])
    assert "| fleet | LEAST_OUTSTANDING_REQUESTS | 90% | 500 | 4 at a time (100% of ideal) |" in markdown
    assert (
        "| fleet | PREFIX_AWARE | 90% | 500 | 4 at a time (100% of ideal) | 8 at a time (100% of ideal) | — (not measured) |"
        in markdown
    )


# -- an inference component's scaling: the scale-out timeline ---------------------------------------


def series_at(line, at: list[float]) -> list:
    """A line's y values at the samples' times (None where it has a gap), its x values checked."""
    assert list(line.get_xdata()) == at
    return [None if math.isnan(y) else y for y in line.get_ydata()]


def test_the_scale_out_timeline_draws_each_steps_samples_its_objective_and_the_span_it_missed(step_load):
    """Per step, the copies (a step line; a failed look a gap), the requests in flight and each
    window's TTFT p95 are the samples; the objective is a line at ttft:MS; the shaded span runs from
    the step to the end of the last window that missed, or to the last sample where it never caught
    up, as its title says; the same component's repeats from zero give their p50 in its title."""
    from runner.render import plots

    with plots.style():
        figure = plots.scale_out_timeline([(step_load, read_file(step_load))])
    assert not isinstance(figure, str), figure
    assert len(figure.axes) == 2 * len(STEPS)
    for index, (name, (base, stepped, step_at, bound, samples)) in enumerate(STEPS.items()):
        counts, ttft = figure.axes[2 * index : 2 * index + 2]
        lines = {line.get_label(): line for axes in (counts, ttft) for line in axes.get_lines()}
        at = [float(s[0]) for s in samples]

        assert lines["copies in service"].get_drawstyle() == "steps-post"
        assert series_at(lines["copies in service"], at) == [s[1] for s in samples]
        assert series_at(lines["requests in flight"], at) == [s[2] for s in samples]
        assert series_at(lines["TTFT p95 of the window"], at) == [
            None if s[4] is None else pytest.approx(s[4] * 1000) for s in samples
        ]
        assert list(lines["TTFT p95 objective"].get_ydata()) == [SLO_S * 1000] * 2
        silent = [s[0] for s in samples if s[4] is None and s[2] > 0]
        if silent:
            assert list(lines["in flight, no first token (missed)"].get_xdata()) == silent
        assert [line.get_xdata()[0] for axes in (counts, ttft) for line in axes.get_lines()
                if line.get_label() == "the step"] == [step_at, step_at]  # fmt: skip
        start, end, caught = shaded(step_at, samples)
        spans = [
            p for axes in (counts, ttft) for p in axes.patches if p.get_label() == "objective missed after the step"
        ]
        assert [(p.get_x(), p.get_x() + p.get_width()) for p in spans] == [(start, end)] * 2
        title = counts.get_title(loc="left").replace("\n", " ")
        assert f"{name} ({step_load.name}): {base} → {stepped} in flight at {step_at:g} s" in title
        assert (f"the objective missed for {end - start:g} s after the step" if caught
                else f"never caught up within {bound:g} s") in title  # fmt: skip
    assert (STEPS["fleet"][2], 90.0, True) == shaded(STEPS["fleet"][2], STEPS["fleet"][4])  # caught up at 90 s
    assert not shaded(STEPS["fleet-b"][2], STEPS["fleet-b"][4])[2]  # never caught up
    first = figure.axes[0].get_title(loc="left").replace("\n", " ")
    assert f"p50 {sorted(FROM_ZERO_S)[1]:g} s (3 of 3 repeats answered)" in first


def test_without_step_load_evidence_the_scale_out_timeline_says_why(evidence):
    from runner.render import plots

    with plots.style():
        said = plots.scale_out_timeline([(evidence["sweep"], read_file(evidence["sweep"]))])
    assert said == "no step-load evidence given (bench --step-load 2,8 --goodput ttft:MS draws it)"


def test_past_four_steps_the_scale_out_timeline_names_the_steps_it_leaves_out(step_load, tmp_path):
    from runner.render import plots

    data = json.loads(step_load.read_text())
    data["step_load"] = [dict(data["step_load"][0], backend=f"component-{n}") for n in range(plots.STEP_PANELS + 1)]
    target = tmp_path / "bench-steps.json"
    target.write_text(json.dumps(data))
    with plots.style():
        figure = plots.scale_out_timeline([(target, read_file(target))])
    assert len(figure.axes) == 2 * plots.STEP_PANELS
    said = figure.get_suptitle().replace("\n", " ")
    assert (
        said == f"the first {plots.STEP_PANELS} steps given; not drawn: component-{plots.STEP_PANELS} ({target.name})"
    )
