"""The in-region bench kit: `runner.bench`'s benchmark, run on a server's own instance against its
loopback port, so the difference from the row measured through the SSM tunnel is the path.

`python -m runner.bench --in-region` sends it there with SSM Run Command (`AWS-RunShellScript`):
the commands fetch the kit's zip (an S3 asset of the server's stack, the only object of the
bootstrap bucket the instance role may read), run it with the host's own `python3` (a zip with a
`__main__.py` runs as a program) and copy its result to the stack's evidence bucket with the AWS
CLI every server already has (its boot script installs it), because Run Command's inline output is
cut at about 24 KB. The runner reads the result back into its evidence.

The measuring is the runner's own: the zip holds this file and, beside it, the runner's measuring
core (`runner/timing`, copied in as the package `timing` when the stack is synthesized,
inference_constructs/in_region.py): the same request bodies, stream reading, record fields, warm-up,
load engine and metrics reading, in the standard library alone. Only its transport is its own
(http.client, `timing/http_client.py`; the runner's is aiohttp, which the host does not have: the
DLAMIs' Python is the distribution's, which refuses `pip install` into it (PEP 668) and ships
without `venv`/`ensurepip`, and installing anything would change the host being measured). It
needs Python 3.10+ and nothing else (the DLAMIs have 3.12). What is left here is the kit's own:
its arguments, the host's accelerator read with the host's own tool (nvidia-smi's query loop, else
neuron-monitor's JSON reports) and the host's facts, and its result.

What it measures is exactly what `bench_backend` measures: one untimed warm-up on the connection
the timed requests reuse, then `repeats` streamed requests one at a time (after an unreachable
first request the rest are skipped); or, given load levels (`--concurrency`, `--rate`), each level
as the runner's load engine runs it, with a kept-alive connection per request in flight, each
opened by an untimed warm-up, and, given `--requests`, a workload's requests as the runner built
them (bodies, conversations). Its records hold what it measured under RequestRecord's field names;
the runner reads them back as RequestRecords (the fields it did not set take their defaults, the
derived rates are computed there). It exits 0 whenever it wrote its result (failed requests are
records with their error), 2 on a bad configuration.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import gzip
import json
import os
import platform
import queue
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from timing.chat import WARM_UP, BodyConversation, BodyRequest, ChatRequest, warm_up
from timing.faults import Unreachable, explain, first_line
from timing.http_client import HttpStreamClient
from timing.load import CLOSED, MOST_WARM_UPS, LoadLevel, Unit, one_at_a_time, run_level
from timing.metrics import MetricsSampler

# 4: records hold what the kit measured (RequestRecord's fields it set), not every field.
KIT_VERSION = 4
# The server's loopback port, never through a proxy the host's environment names.
LOOPBACK = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class KitRecord:
    """One request's record as the kit writes it: what was measured, by RequestRecord's field names
    (the measuring sets them by attribute)."""

    def __init__(self, backend: str, run: int, level: dict[str, Any] | None = None) -> None:
        self.backend, self.run, self.ok, self.error = backend, run, False, None
        self.started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
        self.level = level

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def level_of(data: dict[str, Any]) -> LoadLevel:
    """A level as the runner passes it (`LoadLevel.to_json()`)."""
    return LoadLevel(
        data["mode"], data["value"], data["requests"], data.get("max_concurrency"), data.get("input_tokens")
    )


def chat_request(settings: dict[str, Any]) -> ChatRequest:
    """A request as the runner passes it: the config's own prompt, or its warm-up
    (runner/measure/host_rows.py kit_warm_up)."""
    return ChatRequest(
        settings["prompt"],
        max_tokens=settings["max_tokens"],
        temperature=settings.get("temperature", 0.0),
        usage_per_chunk=settings.get("usage_per_chunk", False),
    )


class Measure:
    """The warm-ups and the timed requests of one run, one at a time or level by level."""

    def __init__(self, config: dict[str, Any], clock: float) -> None:
        self.config, self.clock = config, clock
        self.backend = config["backend"]
        self.timeout_s = float(config.get("timeout_s", 60.0))
        self.warm = chat_request(config["warm_up"]) if config.get("warm_up") else WARM_UP
        self.warm_ups: list[KitRecord] = []
        self.records: list[KitRecord] = []
        self.opened = 0
        # Per level: when its timed requests ran on the accelerator sampler's clock (s, after its
        # warm-ups), and the server's metrics.
        self.spans: list[list[float]] = []
        self.metrics: list[dict[str, Any] | None] = []

    def client(self) -> HttpStreamClient:
        return HttpStreamClient(self.config["base_url"], self.config["model_id"], self.timeout_s)

    def one_at_a_time(self) -> None:
        """One warm-up on the connection the timed requests reuse, then `repeats` requests."""
        config = self.config
        level = config.get("level") or LoadLevel(CLOSED, 1, config["repeats"]).to_json()
        client = self.client()
        try:
            self.warm_ups.append(warm_up(client.chat, KitRecord(self.backend, 0), explain, self.warm))
            self.records = one_at_a_time(
                client.chat,
                explain,
                chat_request(config),
                int(config["repeats"]),
                lambda run: KitRecord(self.backend, run, level),
                down=lambda error: isinstance(error, Unreachable),
            )
        finally:
            client.close()
        self.opened = client.opened

    def level(self, level: LoadLevel, units: list[Unit] | None) -> None:
        """One load level as the runner's engine runs it: each request in flight on a kept-alive
        connection of its own, opened by an untimed warm-up (all at once, as the runner's asyncio
        client warms its connections) before the level's first timed request. With `units` (a
        workload's requests as the runner built them) request i is unit i modulo their number;
        without, every request is the config's prompt."""
        config, recorded = self.config, level.to_json()
        settings = config.get("metrics")
        sampler = (
            MetricsSampler(settings["url"], settings["names"], float(settings.get("every_s", 0.5)), LOOPBACK).start()
            if settings
            else None
        )
        clients = [self.client() for _ in range(level.in_flight)]
        warming = clients[:MOST_WARM_UPS]
        with ThreadPoolExecutor(max_workers=len(warming)) as pool:
            self.warm_ups += pool.map(
                lambda client: warm_up(client.chat, KitRecord(self.backend, 0, recorded), explain, self.warm), warming
            )
        idle: queue.SimpleQueue[HttpStreamClient] = queue.SimpleQueue()
        for client in clients:
            idle.put(client)

        def chat(request: Any, record: Any) -> Any:
            client = idle.get()
            try:
                return client.chat(request, record)
            finally:
                idle.put(client)

        began = time.perf_counter()
        self.records += run_level(
            chat,
            explain,
            level,
            units or [chat_request(config)],
            int(config.get("seed", 0)),
            lambda run: KitRecord(self.backend, run, recorded),
        )
        ended = time.perf_counter()
        for client in clients:
            client.close()
        self.opened += sum(client.opened for client in clients)
        if sampler is not None:
            sampler.stop()
        self.spans.append([round(began - self.clock, 3), round(ended - self.clock, 3)])
        self.metrics.append(sampler.to_json() if sampler is not None else None)


def bench(config: dict[str, Any], requests: list[list[Unit]] | None = None) -> dict[str, Any]:
    """The warm-up, then the timed requests (one at a time, or each load level in turn); the result
    the runner reads back. `requests`: per level, the workload's requests as the runner built them."""
    usage0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    load_before = os.getloadavg()
    sampler = AcceleratorSampler().start()
    try:
        run = Measure(config, sampler.started)
        if config.get("levels"):
            for index, level in enumerate(config["levels"]):
                run.level(level_of(level), requests[index] if requests is not None else None)
        else:
            run.one_at_a_time()
    finally:
        accelerator = sampler.stop()
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    result: dict[str, Any] = {
        "kit": KIT_VERSION,
        "config": config,
        "host": host_facts(load_before),
        "client": {
            "cpu_s": round((usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime), 4),
            "wall_s": round(time.perf_counter() - wall0, 4),
            "connections_opened": run.opened,
        },
        "warm_up": run.warm_ups[0].to_json() if run.warm_ups else None,
        "warm_ups": [warm.to_json() for warm in run.warm_ups],
        "records": [record.to_json() for record in run.records],
        "accelerator": accelerator,
    }
    if config.get("levels"):
        result["level_spans"] = run.spans
        if config.get("metrics"):
            result["server_metrics"] = run.metrics
    return result


# nvidia-smi's query loop (its man page: `--query-gpu`, `--format=csv,noheader,nounits`,
# `--loop-ms`; `--help-query-gpu`: utilization.gpu is the percent of the last sample period a
# kernel ran, memory.used in MiB), one line per GPU every 500 ms.
NVIDIA_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,utilization.gpu,memory.used",
    "--format=csv,noheader,nounits",
    "--loop-ms=500",
]
# neuron-monitor's settings (the Neuron Monitor User Guide): every runtime on the host, its
# NeuronCores' utilization and its device memory, a report a second on standard output.
NEURON_MONITOR_CONFIG = {
    "period": "1s",
    "neuron_runtimes": [{"tag_filter": ".*", "metrics": [{"type": "neuroncore_counters"}, {"type": "memory_used"}]}],
    "system_metrics": [],
}


def nvidia_sample(line: str):
    """One GPU's reading of nvidia-smi's CSV loop: (utilization %, memory used MiB), or None."""
    parts = [part.strip() for part in line.split(",")]
    try:
        return float(parts[1]), float(parts[2])
    except (IndexError, ValueError):
        return None


def neuron_sample(line: str):
    """One neuron-monitor report: (mean utilization % of the NeuronCores in use, device memory MiB)."""
    try:
        report = json.loads(line)
    except ValueError:
        return None
    cores, device_bytes = [], 0
    for runtime in report.get("neuron_runtime_data") or []:
        counters = (runtime.get("report") or {}).get("neuroncore_counters") or {}
        for core in (counters.get("neuroncores_in_use") or {}).values():
            if isinstance(core.get("neuroncore_utilization"), (int, float)):
                cores.append(float(core["neuroncore_utilization"]))
        used = ((runtime.get("report") or {}).get("memory_used") or {}).get("neuron_runtime_used_bytes") or {}
        device_bytes += used.get("neuron_device") or 0
    if not cores:
        return None
    return sum(cores) / len(cores), device_bytes / 2**20


def answers(command: list) -> bool:
    """The command runs and exits 0 (nvidia-smi on a host without a driver exits 9)."""
    try:
        return subprocess.run(command, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class AcceleratorSampler:
    """The accelerator's own figures while the kit measures (the host's nvidia-smi, else its
    neuron-monitor), so a level can be told GPU-bound or not; a host with neither says so."""

    def __init__(self) -> None:
        self.tool = None
        self.problem = None
        self.samples: list = []
        self.process = None
        self.thread = None
        self.settings = None
        self.started = time.perf_counter()

    def start(self) -> AcceleratorSampler:
        if shutil.which("nvidia-smi") and answers(["nvidia-smi", "-L"]):
            self.tool, command, parse = "nvidia-smi", NVIDIA_QUERY, nvidia_sample
        elif shutil.which("neuron-monitor"):
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as settings:
                json.dump(NEURON_MONITOR_CONFIG, settings)
            self.settings = settings.name
            self.tool, command, parse = "neuron-monitor", ["neuron-monitor", "-c", settings.name], neuron_sample
        else:
            self.problem = "no nvidia-smi or neuron-monitor on the host"
            return self
        if shutil.which("stdbuf"):
            # Each reading as the tool prints it, not held in its pipe's buffer: it is timed on arrival.
            command = ["stdbuf", "-oL", *command]
        try:
            self.process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True
            )
        except OSError as error:
            self.problem = f"{self.tool}: {first_line(error)}"
            return self
        self.thread = threading.Thread(target=self.read, args=(parse,), daemon=True)
        self.thread.start()
        return self

    def read(self, parse) -> None:
        for line in self.process.stdout:
            sample = parse(line)
            if sample is not None:
                self.samples.append((round(time.perf_counter() - self.started, 3), *sample))

    def stop(self) -> dict:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.thread.join(timeout=5)
            if not self.samples:
                self.problem = f"{self.tool} gave no reading (exit {self.process.returncode})"
        if self.settings:
            os.unlink(self.settings)
        busy = [sample[1] for sample in self.samples]
        return {
            "tool": self.tool,
            "problem": self.problem,
            "samples": [list(sample) for sample in self.samples],
            "utilization_pct_mean": round(sum(busy) / len(busy), 2) if busy else None,
            "utilization_pct_max": max(busy) if busy else None,
            "memory_used_mib_max": max(sample[2] for sample in self.samples) if self.samples else None,
        }


def host_facts(load_before) -> dict:
    """What the client shared the server's host with: its CPUs and their load."""
    model = None
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith(("model name", "cpu model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "vcpus": os.cpu_count(),
        "cpu_model": model,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


REQUIRED = ("backend", "base_url", "model_id", "repeats")
# Without a workload's requests, every timed request is the config's own prompt.
REQUIRED_WITHOUT_REQUESTS = ("prompt", "max_tokens")


def bad_config(line: str):
    print(f"bench kit: {line}", file=sys.stderr)
    raise SystemExit(2)


def read_config(encoded: str) -> dict:
    try:
        config = json.loads(base64.b64decode(encoded, validate=True).decode())
    except ValueError as error:
        bad_config(f"--config is not base64 JSON: {error}")
    if not isinstance(config, dict):
        bad_config("--config must be a JSON object")
    missing = [key for key in REQUIRED if key not in config]
    if missing:
        bad_config(f"--config lacks {', '.join(missing)}")
    if not isinstance(config["repeats"], int) or config["repeats"] < 1:
        bad_config("repeats must be a whole number of at least 1")
    if config.get("metrics") is not None and not (
        isinstance(config["metrics"], dict)
        and str(config["metrics"].get("url", "")).startswith("http://")
        and isinstance(config["metrics"].get("names"), list)
    ):
        bad_config("metrics must be {url: http://..., names: [...]}")
    for level in config.get("levels") or []:
        if not (
            isinstance(level, dict)
            and level.get("mode") in ("concurrency", "rate")
            and isinstance(level.get("value"), (int, float))
            and level["value"] > 0
            and isinstance(level.get("requests"), int)
            and level["requests"] >= 1
        ):
            bad_config(
                f"a level must be a LoadLevel's JSON (mode concurrency or rate, value and requests above 0): {level!r}"
            )
    return config


def read_requests(path: str, config: dict) -> list[list[Unit]]:
    """A workload's requests, as the runner built them (runner/measure/workload_in_region.py
    unit_json): per level of the config, a list of units, each a request (`body`: the
    chat-completions body; `stamp`: what the workload asked of it) or a `conversation` of such
    requests, each turn's body holding its own user message only."""
    try:
        with open(path, "rb") as file:
            raw = file.read()
        data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, ValueError, EOFError) as error:
        bad_config(f"--requests {path}: not a JSON file ({first_line(error)})")
    levels = data.get("levels") if isinstance(data, dict) else None
    if not isinstance(levels, list) or len(levels) != len(config.get("levels") or []):
        bad_config(f"--requests {path}: needs one list of requests per level of the config")

    def request_ok(request) -> bool:
        body = request.get("body") if isinstance(request, dict) else None
        return isinstance(body, dict) and isinstance(body.get("messages"), list) and body.get("stream") is True

    def request_of(request: dict) -> BodyRequest:
        return BodyRequest(request["body"], request.get("stamp") or {})

    units: list[list[Unit]] = []
    for level in levels:
        if not isinstance(level, list) or not level:
            bad_config(f"--requests {path}: every level needs at least one request")
        units.append([])
        for unit in level:
            turns = unit.get("conversation") if isinstance(unit, dict) and "conversation" in unit else [unit]
            if not isinstance(turns, list) or not turns or not all(request_ok(t) for t in turns):
                bad_config(
                    f"--requests {path}: a request is {{body: a streamed chat body with messages, stamp}} "
                    f"or {{conversation: [such requests]}}: {json.dumps(unit)[:120]}"
                )
            is_conversation = "conversation" in unit
            units[-1].append(BodyConversation(tuple(map(request_of, turns))) if is_conversation else request_of(unit))
    return units


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench-kit", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="the benchmark's settings, base64-encoded JSON")
    parser.add_argument("--requests", help="a workload's requests per level (JSON), as the runner built them")
    parser.add_argument("--out", required=True, help="where to write the result (JSON)")
    args = parser.parse_args(argv)
    config = read_config(args.config)
    requests = read_requests(args.requests, config) if args.requests else None
    if requests is None:
        missing = [key for key in REQUIRED_WITHOUT_REQUESTS if key not in config]
        if missing:
            bad_config(f"--config lacks {', '.join(missing)} (or give --requests)")
    result = bench(config, requests)
    with open(args.out, "w") as out:
        json.dump(result, out, indent=1)
    ok = sum(1 for r in result["records"] if r["ok"])
    first_error = next((r["error"] for r in result["records"] if r["error"]), None)
    print(
        f"bench kit: {config['backend']}: {ok}/{len(result['records'])} ok on {result['host']['vcpus']} vCPUs"
        + (f"; first error: {first_error}" if first_error else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
