"""`python -m runner.bench`: one fixed prompt, streamed and timed, `--repeats` times per backend.

Per request: time to first token, end-to-end time, output tokens (server usage), tokens/s, and
the server's own timings where it reports them. Every backend is warmed the same way first (an
untimed "Hi", 4 tokens, kept apart in the evidence). One failing backend never stops the
others; the exit status is non-zero only when nothing was measured. Table and evidence come
from the same records.

`--in-region` adds, for each EC2 server, a second row (`<backend>@host`): the same benchmark (one
request at a time, the same load levels, or the same workload's requests) run on the server's own
instance against its loopback port through SSM Run Command (`runner/cloud/reach/in_region.py`,
`runner/measure/workload_in_region.py`), beside the row measured through the SSM tunnel, so the
difference is the path. Records carry `"path": "tunnel"` or `"path": "in-region"`.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from runner.cli.options import add_block_arguments, add_common_arguments, block_config
from runner.cli.progress import RequestProgress
from runner.cli.session import Discovery, main_guard, run_command
from runner.cloud.reach.in_region import no_instance_reason, row_name, run_in_region
from runner.core.accuracy import Accuracy, accuracy_by_backend
from runner.core.backends import Backend
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence, load
from runner.core.flags import above, at_least
from runner.core.records import AgentTask
from runner.core.typed_json import to_json
from runner.measure import ChatRequest, scale_out
from runner.measure.bench_file import BenchFile
from runner.measure.benchmark import bench_backend, sweep_backend, timeout_hint
from runner.measure.capacity import Budget
from runner.measure.fleet_copies import COPIES_WAIT_S, measure_copies, not_a_component, parse_copies
from runner.measure.host_rows import add_host_row, kit_warm_up, mark_tunnel_rows
from runner.measure.load import (
    LoadLevel,
    Prompt,
    check_clients,
    parse_numbers,
    plan_levels,
    read_prompts,
)
from runner.measure.vendor_benchmark import benchmark_levels, name_stamp, parse_option
from runner.measure.workload_in_region import bench_workload_in_region
from runner.measure.workload_run import BenchPlan, bench_workload
from runner.workloads import SURVEY_MAX_TOKENS, SURVEY_PROMPT, Turn, Workload
from runner.workloads.dataset import read_dataset
from runner.workloads.presets import AGENT, PRESETS, get_preset
from runner.workloads.slo import Slo, parse_goodput

PROMPT = SURVEY_PROMPT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed requests per backend (default: %(default)s)")
    parser.add_argument(
        "--max-tokens",
        type=int,
        help=f"output token limit (default: {SURVEY_MAX_TOKENS}; per model call with --workload agent: 256)",
    )
    parser.add_argument("--prompt", default=PROMPT, help="the prompt (default: the survey's fixed prompt)")
    parser.add_argument("--compare", type=Path, help="an earlier bench evidence file: adds a change column")
    load = parser.add_argument_group("load levels (default: one request at a time, --repeats of them)")
    load.add_argument(
        "--concurrency", metavar="N[,N...]", help="closed loop: N requests always in flight, e.g. 1,4,16,64"
    )
    load.add_argument("--rate", metavar="R[,R...]", help="open loop: Poisson arrivals at R requests/s on average")
    load.add_argument("--max-concurrency", type=int, help="open loop: at most this many in flight (later sends wait)")
    load.add_argument(
        "--requests", type=int, help="timed requests per level (default: four waves, or 10 s of arrivals)"
    )
    load.add_argument("--seed", type=int, default=0, help="seed of the open-loop arrivals (default: %(default)s)")
    load.add_argument(
        "--level-seconds",
        type=float,
        metavar="S",
        help="a time limit per level (and for --repeats): nothing is sent after S seconds, what is in flight "
        "finishes (GuideLLM's --max-seconds bounds each of its benchmarks alike)",
    )
    load.add_argument("--prompts", type=Path, help='JSON lines {"prompt": ..., "max_tokens": N}, used in turn')
    load.add_argument(
        "--clients",
        type=int,
        default=1,
        metavar="K",
        help="spread each level over K client processes, one merged distribution (default: %(default)s)",
    )
    work = parser.add_argument_group(
        "workload (lengths in the backend's own tokens; default: the survey's prompt, output left to the model)"
    )
    work.add_argument("--workload", metavar="NAME", help=f"a named preset: {', '.join(PRESETS)} (catalog/workloads.py)")
    work.add_argument(
        "--input-tokens",
        metavar="N[,N...]",
        help="synthetic prompts of N tokens; several lengths make a prompt-length sweep",
    )
    work.add_argument("--input-deviation", type=int, metavar="SD", help="standard deviation of the lengths")
    work.add_argument("--input-min", type=int, help="no prompt shorter than this")
    work.add_argument("--input-max", type=int, help="no prompt longer than this")
    work.add_argument(
        "--output-tokens", type=int, help="output tokens per request, forced where the engine allows (ignore_eos)"
    )
    work.add_argument("--prefix-tokens", type=int, default=0, help="a shared prefix of this many tokens per request")
    work.add_argument("--prefixes", type=int, default=1, help="how many distinct shared prefixes (default: 1)")
    work.add_argument(
        "--turns", type=int, default=1, help="conversations of this many turns, each carrying the context"
    )
    work.add_argument(
        "--dataset",
        type=Path,
        help='your own prompts: JSON lines {"prompt": ...} or {"messages": [...]}, or a ShareGPT JSON file',
    )
    slo = parser.add_argument_group("service-level objectives (vllm bench serve's --goodput form)")
    slo.add_argument(
        "--goodput",
        nargs="+",
        action="extend",  # given twice, both count (a key in both is refused), not the last alone
        metavar="KEY:MS",
        help="per-request objectives: ttft:MS tpot:MS e2el:MS (all must hold)",
    )
    slo.add_argument(
        "--find-capacity",
        action="store_true",
        help="search for the largest concurrency (or rate, with --rate) at which --slo-share of requests meet every objective",
    )
    slo.add_argument(
        "--slo-share",
        type=float,
        help="share of requests that must meet the objectives (default: the preset's, else 0.9)",
    )
    slo.add_argument("--capacity-levels", type=int, default=10, help="most levels the capacity search runs")
    slo.add_argument("--capacity-seconds", type=float, default=1800.0, help="most seconds the capacity search takes")
    fleet = parser.add_argument_group("a fleet of copies (an endpoint of inference components)")
    fleet.add_argument(
        "--copies",
        metavar="N[,N...]",
        help="with --find-capacity: the capacity at each copy count of an inference component (set with "
        "UpdateInferenceComponentRuntimeConfig, waited for in service), the scaling efficiency "
        "capacity(N)/(N x capacity(1)); the copy count it had is set back at the end",
    )
    fleet.add_argument(
        "--copies-wait",
        type=float,
        default=COPIES_WAIT_S,
        metavar="S",
        help="most seconds a copy count may take to be in service (default: %(default)g)",
    )
    parser.add_argument("--no-server-metrics", action="store_true", help="do not sample the servers' /metrics")
    parser.add_argument(
        "--vendor-benchmark",
        metavar="ROLE_ARN,S3_URI",
        help="opt-in: after each SageMaker endpoint's levels, AWS's own benchmark job (CreateAIBenchmarkJob, AIPerf) "
        "at the same workload, run as the role, writing to the S3 location; its figures beside ours (bills the job)",
    )
    parser.add_argument(
        "--vendor-benchmark-hf-secret",
        metavar="SECRET_ARN",
        help="with --vendor-benchmark: a Secrets Manager secret holding a Hugging Face token, for a gated tokenizer "
        "(the job's role needs secretsmanager:GetSecretValue on it)",
    )
    add_block_arguments(parser)
    parser.add_argument(
        "--quality",
        type=Path,
        metavar="FILE",
        help="runner.quality evidence: its accuracy per backend goes beside the speed in the table",
    )
    parser.add_argument(
        "--in-region",
        action="store_true",
        help="also run the benchmark on each EC2 server's own instance (SSM Run Command): a second row per server",
    )
    scale_out.add_arguments(parser)
    add_common_arguments(parser)
    return parser


def check_level_seconds(args: argparse.Namespace) -> None:
    if args.level_seconds is None:
        return
    above("--level-seconds", args.level_seconds, 0, "seconds")
    if args.in_region:
        raise RunnerError(
            "--level-seconds bounds the levels sent from this machine; the in-region kit runs each level whole: "
            "give --requests instead"
        )


WORKLOAD_FLAGS = ("workload", "input_tokens", "output_tokens", "dataset", "goodput", "find_capacity")


def vendor_option(args: argparse.Namespace) -> None:
    """`--vendor-benchmark` checked before anything is sent: a workload's levels to hand AWS."""
    args.vendor_benchmark = parse_option(args.vendor_benchmark, args.vendor_benchmark_hf_secret)
    if args.workload == AGENT or not wants_workload(args) or args.find_capacity:
        raise RunnerError(
            "--vendor-benchmark hands AWS's benchmark a workload's closed-loop levels: give --workload NAME or "
            "--input-tokens/--output-tokens with --concurrency (not agent traffic or --find-capacity)"
        )


def vendor_beside(
    backend: Backend, evidence: Evidence[BenchFile], output_tokens: int | None, option: tuple[str, str, str | None]
) -> None:
    """AWS's benchmark of the backend's endpoint at the levels just measured, kept beside them;
    its lines said even when Ctrl-C ends it (a workload config it had to leave among them)."""
    lines: list[str] = []
    try:
        jobs = benchmark_levels(backend, evidence.file.records, output_tokens, option, name_stamp(), lines)
    finally:
        for line in lines:
            console.print(f"[yellow]note:[/yellow] {line}")
            evidence.notice(line)
    evidence.file.vendor_benchmark = [*(evidence.file.vendor_benchmark or []), *jobs] or None
    evidence.save()


def wants_workload(args: argparse.Namespace) -> bool:
    return any(getattr(args, flag) for flag in WORKLOAD_FLAGS) or args.turns > 1 or args.prefix_tokens > 0


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    at_least("--repeats", args.repeats, 1)
    at_least("--max-tokens", args.max_tokens, 1)
    above("--capacity-seconds", args.capacity_seconds, 0, "seconds")
    check_level_seconds(args)
    if args.vendor_benchmark is not None:
        vendor_option(args)
    elif args.vendor_benchmark_hf_secret is not None:
        raise RunnerError("--vendor-benchmark-hf-secret goes with --vendor-benchmark ROLE_ARN,S3_URI")
    copy_counts(args)
    if scale_out.wanted(args):
        return run_scale_out(args)
    if args.workload == AGENT:
        return run_agent_traffic(args)
    args.max_tokens = args.max_tokens or SURVEY_MAX_TOKENS
    if wants_workload(args):
        return run_workload(args)
    baseline = load(args.compare) if args.compare else None
    if baseline is not None and baseline["command"] != "bench":
        raise RunnerError(f"--compare {args.compare} is {baseline['command']} evidence: it takes an earlier bench file")
    earlier = BenchFile.from_json(baseline) if baseline is not None else None
    accuracy = quality_accuracy(args.quality) if args.quality else {}
    levels = plan_levels(args.concurrency, args.rate, args.requests, args.max_concurrency)
    check_clients(args.clients, levels)
    if args.in_region and args.prompts:
        raise RunnerError(
            "--in-region sends one prompt (--prompt) to each server's own host; it does not take --prompts"
        )
    prompts = read_prompts(args.prompts, args.max_tokens) if args.prompts else [Prompt(args.prompt, args.max_tokens)]
    request = ChatRequest(prompt=prompts[0].text, max_tokens=prompts[0].max_tokens, temperature=0.0)
    config = {
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": 0.0,
        "repeats": args.repeats,
        "levels": [level.to_json() for level in levels] or None,
        "seed": args.seed,
        "prompts_file": str(args.prompts) if args.prompts else None,
        "prompts": len(prompts),
        "in_region": args.in_region or None,
        "level_seconds": args.level_seconds,
    } | block_config(args)

    evidence_kept: list[Evidence[BenchFile]] = []

    def measure(discovery: Discovery, evidence: Evidence[BenchFile]) -> None:
        evidence_kept.append(evidence)
        if accuracy:
            evidence.file.accuracy = accuracy
        servers = plan_in_region(discovery, evidence) if args.in_region else []
        with RequestProgress() as progress:
            for backend in discovery.backends:
                if levels:
                    task = progress.add_task(backend.name, total=sum(level.requests for level in levels))
                    sweep_backend(backend, levels, prompts, args, evidence, progress.advancing(task))
                    continue
                task = progress.add_task(backend.name, total=args.repeats)
                bench_backend(
                    backend,
                    request,
                    args.repeats,
                    args.timeout,
                    evidence,
                    progress.advancing(task),
                    args.level_seconds,
                )
        if servers:
            bench_in_region(servers, request, levels, args, evidence)

    code = run_command("bench", args, config, measure, measured=any_ok, baseline=earlier)
    say_timeouts(evidence_kept, args.timeout)
    return code


def any_ok(file: BenchFile) -> bool:
    """Whether any timed request got its answer (exit 0)."""
    return any(r.ok for r in file.records)


def say_timeouts(kept: list[Evidence[BenchFile]], timeout_s: float) -> None:
    """After the table, one line when requests ran past --timeout: what to do about it (a timeout
    is a slow moment, not a dead server)."""
    hint = timeout_hint(kept[0].file, timeout_s) if kept else None
    if hint:
        console.print(f"[yellow]note:[/yellow] {hint}")


def workload_plan(args: argparse.Namespace) -> BenchPlan:
    """The workload and its objectives from the flags (a preset first, the flags over it)."""
    preset = get_preset(args.workload) if args.workload else None
    if args.prompts:
        raise RunnerError("--prompts and a workload: give your prompts as --dataset")
    if args.dataset and (args.input_tokens or (preset and preset.input_tokens)):
        raise RunnerError("--dataset brings its own prompts: give no --input-tokens or length preset with it")
    fixed: tuple[Turn, ...] = ()
    source = preset.source if preset else ""
    if args.dataset:
        # A ShareGPT reply's length sets its request's output, as vLLM's loader does: counted on each
        # backend's own tokenizer when it is measured, estimated at 4/3 tokens a word where it has
        # none (runner/measure/workload_run.py); --output-tokens overrides it.
        turns, kind = read_dataset(
            args.dataset,
            args.output_tokens or args.max_tokens or SURVEY_MAX_TOKENS,
            None if args.output_tokens else words_to_tokens,
        )
        fixed, source = tuple(turns), f"{args.dataset} ({kind}, {len(turns)} prompts)"
        if kind == "sharegpt" and not args.output_tokens:
            source += (
                "; output lengths from each reply, on the server's tokenizer (else estimated at 4/3 tokens a word)"
            )
    input_tokens = (
        tuple(int(v) for v in parse_numbers(args.input_tokens, "--input-tokens", integer=True))
        if args.input_tokens
        else ()
    )
    overridden = bool(preset) and (input_tokens or args.output_tokens is not None or args.input_deviation is not None)
    workload = Workload(
        # A preset whose lengths were changed is not that preset any more (advise would trust it).
        name=f"{args.workload}-custom" if overridden else args.workload or ("dataset" if args.dataset else "custom"),
        input_tokens=input_tokens or (preset.input_tokens if preset else ()),
        input_deviation=first_given(args.input_deviation, preset.input_deviation if preset else 0),
        input_min=first_given(args.input_min, preset.input_min if preset else None),
        input_max=first_given(args.input_max, preset.input_max if preset else None),
        output_tokens=first_given(args.output_tokens, preset.output_tokens if preset else None),
        prefix_tokens=args.prefix_tokens,
        prefixes=args.prefixes,
        turns=args.turns,
        fixed=fixed,
        source=source,
        seed=args.seed,
    )
    if not workload.input_tokens and not workload.fixed:
        workload = replace(
            workload, fixed=(Turn(args.prompt, args.max_tokens or SURVEY_MAX_TOKENS),), source="the survey's prompt"
        )
    workload.check()
    slo = parse_goodput(args.goodput) if args.goodput else (preset.slo() if preset and preset.slo_limits else Slo(()))
    if args.find_capacity and not slo:
        raise RunnerError(
            "--find-capacity searches for the most load within objectives: give --goodput (or a --workload with them)"
        )
    if args.slo_share is not None and not slo:
        raise RunnerError("--slo-share is the share within the objectives: give --goodput (or a --workload with them)")
    if args.capacity_levels < 1 or args.capacity_seconds <= 0:
        raise RunnerError("--capacity-levels and --capacity-seconds: above 0")
    share = (
        args.slo_share if args.slo_share is not None else (preset.slo_share if preset and preset.slo_limits else 0.9)
    )
    if not 0 < share <= 1:
        raise RunnerError(f"--slo-share {share}: a share above 0 and at most 1")
    levels = plan_levels(args.concurrency, args.rate, args.requests, args.max_concurrency)
    check_clients(args.clients, levels, searched=args.find_capacity)
    if args.find_capacity and len([v for v in (args.concurrency, args.rate) if v]) > 1:
        raise RunnerError("--find-capacity searches concurrency, or rate with --rate: give one of them")
    return BenchPlan(
        workload=workload,
        slo=slo,
        concurrency=[int(level.value) for level in levels if level.mode == "concurrency"],
        rates=[level.value for level in levels if level.mode == "rate"],
        max_concurrency=args.max_concurrency,
        requests=args.requests,
        repeats=args.repeats,
        seed=args.seed,
        timeout_s=args.timeout,
        find_capacity=("rate" if args.rate else "concurrency") if args.find_capacity else None,
        max_tokens=args.max_tokens or SURVEY_MAX_TOKENS,
        slo_share=share,
        budget=Budget(levels=args.capacity_levels, seconds=args.capacity_seconds),
        metrics=not args.no_server_metrics,
        level_seconds=args.level_seconds,
        clients=args.clients,
    )


def first_given(*values):
    """The first value that was given (0 and "" count as given)."""
    return next((v for v in values if v is not None), None)


def words_to_tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 4 / 3))


def run_workload(args: argparse.Namespace) -> int:
    """The benchmark on a workload (runner/measure/workload_run.py)."""
    if args.compare:
        raise RunnerError(
            "--compare adds a change column to the one-prompt table (the survey's prompt, --repeats); "
            "a workload's table has none: leave --compare out"
        )
    plan = workload_plan(args)
    counts = copy_counts(args)
    if plan.find_capacity:
        # The search starts at the smallest level given (else 1), and only the budget bounds it.
        plan.search_start = min([*plan.concurrency, *plan.rates] or [1])
        plan.concurrency, plan.rates = [], []
    config = (
        {
            "workload": plan.workload.to_json(),
            "slo": plan.slo.to_json() if plan.slo else None,
            "slo_share": plan.slo_share,
            "find_capacity": plan.find_capacity,
            "levels": [
                level.to_json() for length in plan.workload.input_tokens or [None] for level in plan.levels(length)
            ],
            "repeats": args.repeats,
            "seed": args.seed,
            "max_tokens": plan.workload.output_tokens or SURVEY_MAX_TOKENS,
            "prompt": plan.workload.fixed[0].prompt if plan.workload.fixed else None,
            "in_region": args.in_region or None,
            "level_seconds": args.level_seconds,
        }
        | ({"copies": counts} if counts else {})
        | block_config(args)
    )

    evidence_kept: list[Evidence[BenchFile]] = []

    def measure(discovery: Discovery, evidence: Evidence[BenchFile]) -> None:
        evidence_kept.append(evidence)
        servers = {b.name for b in plan_in_region(discovery, evidence)} if args.in_region else set()
        total = plan.total_requests if not plan.find_capacity else None
        with RequestProgress() as progress:
            for backend in discovery.backends:
                if counts:
                    why = not_a_component(backend)
                    if why:
                        console.print(f"[yellow]note:[/yellow] {why}")
                        evidence.notice(why)
                        continue
                    task = progress.add_task(backend.name, total=None)
                    measure_copies(backend, plan, counts, evidence, progress.advancing(task), args.copies_wait)
                    continue
                task = progress.add_task(backend.name, total=total)
                tunnel = bench_workload(backend, plan, evidence, progress.advancing(task))
                if args.vendor_benchmark:
                    vendor_beside(backend, evidence, plan.workload.output_tokens, args.vendor_benchmark)
                if backend.name in servers:
                    # The same workload from the server's own host, right after its tunnel row.
                    mark_tunnel_rows({backend.name}, evidence)
                    task = progress.add_task(row_name(backend.name), total=total)
                    if not bench_workload_in_region(tunnel, progress.advancing(task)):
                        progress.remove_task(task)

    code = run_command("bench", args, config, measure, measured=any_ok)
    say_timeouts(evidence_kept, args.timeout)
    return code


def copy_counts(args: argparse.Namespace) -> list[int]:
    """`--copies` as counts ([] without it); it takes the capacity search, which it runs at each."""
    if not args.copies:
        return []
    if not args.find_capacity:
        raise RunnerError("--copies runs the capacity search at each copy count: give --find-capacity and --goodput")
    if args.in_region:
        raise RunnerError(
            "--copies measures an endpoint of inference components, which has no host to run on: leave --in-region out"
        )
    above("--copies-wait", args.copies_wait, 0, "seconds")
    return parse_copies(args.copies)


AGENT_REFUSES = (
    "rate",
    "input_tokens",
    "output_tokens",
    "dataset",
    "goodput",
    "find_capacity",
    "prompts",
    "level_seconds",
    "percentile_metrics",
    "metric_percentiles",
    "copies",
)


def run_agent_traffic(args: argparse.Namespace) -> int:
    """`--workload agent`: sessions of the shared agent at each --concurrency, --requests tasks a
    level (runner/agent/traffic.py); a backend that takes no tools is skipped with one line."""
    if args.in_region:
        raise RunnerError(
            "--workload agent runs the Strands agent on this machine; the in-region kit is a plain HTTP client "
            "(stdlib only), so agent sessions are not run from a server's host: measure it without --in-region"
        )
    given = [f"--{flag.replace('_', '-')}" for flag in AGENT_REFUSES if getattr(args, flag)]
    given += ["--clients"] * (args.clients != 1)
    if given or args.turns > 1 or args.prefix_tokens:
        given += ["--turns"] * (args.turns > 1) + ["--prefix-tokens"] * bool(args.prefix_tokens)
        raise RunnerError(
            f"--workload agent takes --concurrency (sessions at once) and --requests (tasks a level), not {', '.join(given)}"
        )
    from runner.agent.quality import tool_skip_reason
    from runner.agent.traffic import AgentSettings, level_label, run_level, stopped_tasks

    sessions = (
        tuple(int(v) for v in parse_numbers(args.concurrency, "--concurrency", integer=True))
        if args.concurrency
        else (1,)
    )
    settings = AgentSettings(
        sessions=sessions,
        tasks=args.requests,
        max_tokens=args.max_tokens or 256,
        timeout_s=args.timeout,
        seed=args.seed,
    )
    config = {"agent": settings.to_json(), "workload_source": "the counting demo and the quality set's tool-use family"}

    def measure(discovery: Discovery, evidence: Evidence[BenchFile]) -> None:
        tasks = evidence.file.tasks = []
        with RequestProgress(unit="tasks") as progress:
            for backend in discovery.backends:
                why = tool_skip_reason(backend)
                if why:
                    line = f"{backend.name}: skipped, it runs no agent with tools ({why})"
                    console.print(f"[yellow]note:[/yellow] {line}")
                    evidence.notice(line)
                    continue
                task = progress.add_task(backend.name, total=sum(settings.tasks_at(n) for n in sessions))
                for count in sessions:
                    finished: list[AgentTask] = []
                    try:
                        level, warm = run_level(backend, count, settings, progress.advancing(task), finished)
                    except BaseException:
                        # Stopped midway (Ctrl-C, SIGTERM): every task that finished is kept.
                        tasks.extend(stopped_tasks(count, settings, finished))
                        raise
                    tasks.extend(level)
                    evidence.file.warm_up.extend(warm)
                    evidence.save()
                    if not any(t.ok for t in level):
                        first = next((t.error for t in level if t.error), "no task finished")
                        console.print(f"[red]{backend.name} {level_label(count)}:[/red] no task finished: {first}")

    return run_command("bench", args, config, measure, measured=lambda file: any(t.ok for t in file.tasks or []))


def quality_accuracy(path: Path) -> dict[str, Accuracy]:
    """The accuracy per backend of a runner.quality evidence file; another command's is one line."""
    data = load(path)
    if data["command"] != "quality":
        raise RunnerError(f"--quality {path}: {data['command']} evidence; it takes runner.quality evidence")
    return accuracy_by_backend([data])


API_NOTE = "from this machine through the AWS API; no in-region row (no host of ours to run on: see the note)"


def plan_in_region(discovery: Discovery, evidence: Evidence[BenchFile]) -> list[Backend]:
    """The servers the kit can run on; one line for each backend it cannot (none at all: bad input)."""
    if not discovery.aws:
        raise RunnerError(
            "--in-region runs the benchmark on each server through SSM Run Command, which needs AWS: "
            "configure credentials or pass --aws"
        )
    servers, lines = [], []
    for backend in discovery.backends:
        reason = no_instance_reason(backend)
        if reason is None:
            servers.append(backend)
        else:
            lines.append(reason)
    if not servers:
        raise RunnerError("--in-region: " + "; ".join(lines or ["no backend selected"]))
    for line in lines:
        console.print(f"[yellow]note:[/yellow] {line}")
        evidence.notice(line)
    api = {backend.name for backend in discovery.backends if backend.aws_api}
    file = evidence.file
    file.backends = [replace(entry, path_note=API_NOTE) if entry.name in api else entry for entry in file.backends]
    return servers


def bench_in_region(
    servers: list[Backend],
    request: ChatRequest,
    levels: list[LoadLevel],
    args: argparse.Namespace,
    evidence: Evidence[BenchFile],
) -> None:
    """The tunnel rows named as such, then every server's run on its own host as a row of its own:
    one request at a time (`--repeats`), or the same load levels as the tunnel rows."""
    names = {backend.name for backend in servers}
    mark_tunnel_rows(names, evidence)
    evidence.save()
    config = {
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "usage_per_chunk": request.usage_per_chunk,
        "repeats": args.repeats,
        "timeout_s": args.timeout,
        "warm_up": kit_warm_up(),
        "level": LoadLevel("concurrency", 1, args.repeats).to_json(),
        "levels": [level.to_json() for level in levels] or None,
        "seed": args.seed,
    }
    # The kit's requests, warm-ups included, as if each went alone (its command's time limit).
    sent = sum(level.requests + level.in_flight for level in levels) if levels else args.repeats
    console.print(f"[dim]in the region: {', '.join(sorted(names))} through SSM Run Command …[/dim]")
    outcomes = run_in_region(
        servers,
        config,
        repeats=sent,
        timeout_s=args.timeout,
        on_line=lambda line: console.print(f"[dim]{line}[/dim]"),
    )
    evidence.file.in_region = []
    for outcome in outcomes:
        if isinstance(outcome, str):
            console.print(f"[yellow]note:[/yellow] {outcome}")
            evidence.notice(outcome)
            continue
        evidence.file.keep_in_region(outcome.entry())
        if outcome.problem:
            console.print(f"[red]{outcome.problem}[/red]")
        add_host_row(outcome, levels or [LoadLevel("concurrency", 1, args.repeats)], evidence)
    evidence.save()


SCALE_OUT_REFUSES = ("compare", "concurrency", "rate", "find_capacity", "in_region", "workload", "dataset", "prompts")


def run_scale_out(args: argparse.Namespace) -> int:
    """`--from-zero R` and `--step-load C1,C2` on each inference component selected
    (runner/measure/scale_out.py); a backend that has none is skipped with one line."""
    given = [f"--{flag.replace('_', '-')}" for flag in SCALE_OUT_REFUSES if getattr(args, flag)]
    if given:
        raise RunnerError(
            f"--from-zero and --step-load send the one prompt (--prompt) alone: not with {', '.join(given)}"
        )
    plan = scale_out.plan_from(args)
    request = ChatRequest(prompt=args.prompt, max_tokens=args.max_tokens or SURVEY_MAX_TOKENS, temperature=0.0)
    config = {
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "temperature": 0.0,
        "scale_out": to_json(plan),
        "slo": parse_goodput(args.goodput).to_json() if args.goodput else None,
    } | block_config(args)

    def measure(discovery: Discovery, evidence: Evidence[BenchFile]) -> None:
        for backend in discovery.backends:
            try:
                copies = scale_out.Copies(backend, args.timeout)
            except RunnerError as error:
                console.print(f"[yellow]note:[/yellow] {error}")
                evidence.notice(str(error))
                continue
            scale_out.measure_backend(backend, copies, plan, request, args.timeout, evidence)

    return run_command("bench", args, config, measure, measured=scale_out.measured)


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
