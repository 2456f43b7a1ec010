"""Is the client the bottleneck? The runner and a peer client (GuideLLM) side by side against the
known-rate server, at the same concurrency levels, on this machine.

For each client and level: aggregate output tokens/s as a share of the ideal (streams x tokens /
the ideal request time), median time to first token against the server's own truth (from its
request's arrival to its first token's write), and the client's CPU seconds (user + system of the
client process and its children). The server runs in its own process throughout.

    .venv/bin/python benchmarks/client_overhead.py [--levels 1,16,64] [--waves 4]
        [--guidellm .venv-peer/bin/guidellm] [--out results/client-overhead.json]

GuideLLM is optional: without its executable the table has the runner alone. Its JSON layout is
GuideLLM 0.8's (`benchmarks[].metrics`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TTFT_S, RATE, TOKENS = 0.1, 100.0, 100
IDEAL_REQUEST_S = TTFT_S + (TOKENS - 1) / RATE


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_truth(url: str) -> dict[str, list[float]]:
    with urllib.request.urlopen(f"{url}/stats?reset", timeout=10) as response:
        return json.loads(response.read())


def timed_child(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run a client to its end: (wall seconds, CPU seconds of it and its children)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {child.stderr.read().decode()[-800:]}")
    return wall, usage.ru_utime + usage.ru_stime


def run_runner(url: str, streams: int, requests: int, scratch: Path) -> dict[str, Any]:
    results = scratch / f"runner-{streams}"
    argv = [sys.executable, "-m", "runner.bench", "--no-aws", "--local", "never", "--endpoint", f"known={url}",
            "--concurrency", str(streams), "--requests", str(requests), "--max-tokens", str(TOKENS),
            "--results-dir", str(results)]  # fmt: skip
    wall, cpu = timed_child(argv)
    from runner.figures.levels import level_summary

    (path,) = results.glob("*/bench-*.json")
    summary = level_summary(json.loads(path.read_text())["records"])
    return {"output_tok_s": summary["output_tok_s"], "ttft_median_s": summary["ttft_s"]["median"],
            "completed": summary["completed"], "wall_s": wall, "cpu_s": cpu}  # fmt: skip


def run_guidellm(guidellm: str, url: str, streams: int, requests: int, scratch: Path) -> dict[str, Any]:
    data = scratch / f"prompts-{streams}.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": "Write a short paragraph about the ocean."}) + "\n" for _ in range(requests))
    )
    out = scratch / f"guidellm-{streams}.json"
    profile = "kind=synchronous" if streams == 1 else f"kind=concurrent,streams={streams}"
    argv = [guidellm, "run", "--backend", f"kind=openai_http,target={url}", "--profile", profile,
            "--constraint", f"kind=max_requests,count={requests}", "--data", f"kind=json_file,path={data}",
            "--output", f"kind=json,path={out}", "--disable-progress"]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    wall, cpu = timed_child(argv, env)
    report = json.loads(out.read_text())
    metrics = report["benchmarks"][0]["metrics"]
    return {
        "output_tok_s": metrics["output_tokens_per_second"]["successful"]["mean"],
        "ttft_median_s": metrics["time_to_first_token_ms"]["successful"]["median"] / 1000,
        "completed": metrics["request_totals"]["successful"] if "request_totals" in metrics else None,
        "wall_s": wall,
        "cpu_s": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,16,64")
    parser.add_argument("--waves", type=int, default=4, help="requests per level = waves x streams")
    parser.add_argument("--guidellm", default=shutil.which("guidellm") or str(ROOT / ".venv-peer/bin/guidellm"))
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "client-overhead.json")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, str(ROOT / "benchmarks/known_rate_server.py"), "--port", str(port),
                               "--ttft", str(TTFT_S), "--rate", str(RATE), "--tokens", str(TOKENS)])  # fmt: skip
    clients = {"runner": run_runner}
    if Path(args.guidellm).exists():
        clients["guidellm"] = lambda u, s, n, d: run_guidellm(args.guidellm, u, s, n, d)
    rows = []
    try:
        time.sleep(1.0)
        server_truth(url)
        with tempfile.TemporaryDirectory() as scratch:
            for streams in [int(v) for v in args.levels.split(",")]:
                requests = streams * args.waves
                ideal = streams * TOKENS / IDEAL_REQUEST_S
                for name, run in clients.items():
                    figures = run(url, streams, requests, Path(scratch))
                    truth = server_truth(url)
                    truth_ttft = statistics.median(truth["first_token_s"]) if truth["first_token_s"] else None
                    rows.append(figures | {
                        "client": name, "streams": streams, "requests": requests, "ideal_tok_s": ideal,
                        "share_of_ideal": figures["output_tok_s"] / ideal,
                        "server_ttft_median_s": truth_ttft,
                        "ttft_error_ms": (figures["ttft_median_s"] - truth_ttft) * 1000 if truth_ttft else None,
                    })  # fmt: skip
                    print(f"{name:<9} {streams:>3} streams: {rows[-1]['share_of_ideal']:.1%} of ideal, "
                          f"TTFT {figures['ttft_median_s'] * 1000:.1f} ms (server {truth_ttft * 1000:.1f} ms), "
                          f"CPU {figures['cpu_s']:.1f} s", flush=True)  # fmt: skip
    finally:
        server.terminate()
        server.wait()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"cpus": os.cpu_count(), "max_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}
    args.out.write_text(
        json.dumps(
            {"server": {"ttft_s": TTFT_S, "rate": RATE, "tokens": TOKENS}, "machine": machine, "rows": rows}, indent=2
        )
    )
    print("\n| client | streams | share of ideal throughput | TTFT median ms (server truth) | client CPU s |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['client']} | {row['streams']} | {row['share_of_ideal']:.1%} | "
              f"{row['ttft_median_s'] * 1000:.1f} ({row['server_ttft_median_s'] * 1000:.1f}) | {row['cpu_s']:.1f} |")  # fmt: skip
    print(f"\nfigures: {args.out}")


if __name__ == "__main__":
    main()
