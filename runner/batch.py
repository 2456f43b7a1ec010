"""`python -m runner.batch`: one SageMaker batch transform job over a prompt set, timed and priced.

The prompts (`--prompts FILE`, JSON lines with a `prompt` or `messages` field; default: `--count`
generated ones) become OpenAI chat bodies (`stream: false`), uploaded as one JSON-lines object under
the stack's batch input prefix; one transform job runs the stack's SageMaker model over it on one
instance (runner.cloud.jobs.batch_transform) and is followed to its end. Reported per job: records and
output tokens per second and the billable seconds (TransformStartTime to TransformEndTime), with
the job's price at the instance's hourly rate (the offline price table). A bad prompt file is one
line naming the line, exit 2, before anything is uploaded; a failed job shows its FailureReason,
exit 1; Ctrl-C stops the job (StopTransformJob) and says so, exit 130.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from catalog.serving import serving
from runner.cli.options import add_aws_switch, add_outputs_and_region, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import check_region, require_aws
from runner.cloud.outputs import read_outputs_file, read_stack_outputs
from runner.core.backend_entries import BackendEntry
from runner.core.backends import from_output
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence, StackOutputs
from runner.measure.sagemaker import batch_bodies, generated_prompts, read_batch_prompts
from runner.measure.transform_job import BatchFile, batch_backend, run_job
from runner.render.tables import print_report

DEFAULT_COUNT = 32


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.batch", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prompts", type=Path, help='JSON lines, each {"prompt": ...} or {"messages": [...]}, optional "max_tokens"'
    )
    parser.add_argument(
        "--count",
        type=int,
        default=DEFAULT_COUNT,
        help="generated prompts when no file is given (default: %(default)s)",
    )
    parser.add_argument("--max-tokens", type=int, default=100, help="output token limit (default: %(default)s)")
    parser.add_argument("--backend", help="the batch backend to run (default: the one in the stack outputs)")
    parser.add_argument(
        "--poll", type=float, default=15.0, help="seconds between job status polls (default: %(default)s)"
    )
    parser.add_argument(
        "--job-timeout", type=float, default=3600.0, help="stop the job after this many seconds (default: %(default)s)"
    )
    group = parser.add_argument_group("where the stack is")
    add_outputs_and_region(group)
    add_aws_switch(group, no_aws_help=None)
    add_results_dir(parser)
    return parser


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.count < 1 or args.max_tokens < 1 or args.poll <= 0:
        raise RunnerError("--count and --max-tokens must be at least 1, --poll above 0")
    # The prompts first: a bad file is refused before AWS is asked anything or anything uploaded.
    prompts = read_batch_prompts(args.prompts) if args.prompts else generated_prompts(args.count)
    require_aws("runner.batch runs a transform job in SageMaker", args.aws)
    outputs = read_outputs_file(args.outputs_file) if args.outputs_file else read_stack_outputs(
        check_region(args.region) if args.region else None
    )  # fmt: skip
    backend = batch_backend([from_output(o, {}) for o in outputs.backends if not serving(o.kind).chat], args.backend)
    config = {
        "prompts": len(prompts),
        "prompts_file": str(args.prompts) if args.prompts else None,
        "max_tokens": args.max_tokens,
        "poll_s": args.poll,
        "job_timeout_s": args.job_timeout,
        "backend": backend.name,
    }
    evidence = Evidence(BatchFile, config, args.results_dir)
    for line in outputs.problems:
        evidence.notice(line)
    evidence.file.backends = [BackendEntry.of(backend)]
    evidence.file.stack_outputs = StackOutputs(outputs.source, outputs.raw)
    lines = [json.dumps(body).encode() for body in batch_bodies(prompts, backend.model_id, args.max_tokens)]
    interrupted = False
    try:
        ok = run_job(backend, lines, evidence, poll_s=args.poll, timeout_s=args.job_timeout)
    except KeyboardInterrupt:
        interrupted, ok = True, False
    evidence.finish(interrupted=interrupted)
    print_report(evidence.file)
    evidence.announce(interrupted=interrupted)
    return 0 if ok else 1


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
