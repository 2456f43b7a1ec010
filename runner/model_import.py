"""`python -m runner.model_import {import,status,delete} [BACKEND]`: Bedrock Custom Model Import, which CloudFormation does not do.

The backend's stack (InferenceBedrockImportStack) owns a bucket, a CodeBuild project that copies
the lane's Hugging Face weights into it inside AWS, and the role Bedrock imports with; its stack
output names them. `import` copies the weights (skipped when config.json and the safetensors are
already in the bucket, unless --recopy), reads config.json from the bucket and refuses an
architecture Custom Model Import does not accept, starts the import job (or follows the one
already running) and waits for it, then prints the model's ARN and its Custom Model Units. A
model already imported under the output's name is reported and no second job starts. `status`
says where the weights, a running job and the model stand; `delete` deletes the imported model
(the weights stay in the stack's bucket; `runner.sweep --delete` empties it before the stack
goes). Exit 0 on success, 1 when the copy or the import failed in AWS (its reason on one line),
2 on bad input: an unknown backend, no stack output, a refused architecture. Ctrl-C stops
following, not the job.
"""

from __future__ import annotations

import argparse

from catalog import BackendKind, get_backend
from catalog.contract import BackendOutput
from runner.cli.options import add_aws_switch, add_outputs_and_region, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, check_region, require_aws
from runner.cloud.jobs.custom_model_import import ImportFailed, check_output
from runner.cloud.jobs.custom_model_import_steps import (
    ModelImportFile,
    StepOptions,
    delete_model,
    import_model,
    show_status,
)
from runner.cloud.outputs import OutputsReading, read_outputs_file, read_stack_outputs
from runner.core.backend_entries import BackendEntry
from runner.core.console import console
from runner.core.errors import RunnerError, as_fault, describe
from runner.core.evidence import Evidence, StackOutputs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m runner.model_import", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("import", "status", "delete"))
    parser.add_argument(
        "backend", nargs="?", default="bedrock-import", help="the Custom Model Import backend (default: bedrock-import)"
    )
    add_outputs_and_region(parser)
    parser.add_argument(
        "--recopy", action="store_true", help="copy the weights again even when they are already in the bucket"
    )
    parser.add_argument(
        "--poll", type=float, default=15.0, help="seconds between status reads of the copy and the job (default: 15)"
    )
    add_aws_switch(parser, no_aws_help=None)
    add_results_dir(parser)
    return parser


def find_output(name: str, reading: OutputsReading) -> BackendOutput:
    """The backend's stack output, checked; one line when there is none."""
    spec = get_backend(name)  # an unknown name is a CatalogError: one line, exit 2
    if spec.kind != BackendKind.BEDROCK_IMPORT:
        raise RunnerError(f"backend {name} is not a Custom Model Import backend (bedrock-import is)")
    match = next((b for b in reading.backends if b.name == name), None)
    if match is None:
        why = f" ({reading.problems[0]})" if reading.problems else ""
        raise RunnerError(
            f"backend {name} has no stack output in {reading.source}{why}: deploy {spec.stack} first "
            f"(-c backends=...,{name})"
        )
    return check_output(match)


def run(argv: list[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv)
    require_aws("runner.model_import works through the AWS API", args.aws)
    if args.region:
        check_region(args.region)
    get_backend(args.backend)  # an unknown backend fails before any AWS call
    reading = read_outputs_file(args.outputs_file) if args.outputs_file else read_stack_outputs(args.region)
    output = find_output(args.backend, reading)
    evidence = Evidence(
        ModelImportFile, {"action": args.action, "backend": output.name, "recopy": args.recopy}, args.results_dir
    )
    evidence.file.backends = [BackendEntry.of_output(output)]
    evidence.file.stack_outputs = StackOutputs(reading.source, reading.raw)
    for line in reading.problems:
        evidence.notice(line)
    bedrock = boto_client("bedrock", output.region, 30)
    action = {"import": import_model, "status": show_status, "delete": delete_model}[args.action]
    options = StepOptions(poll_s=args.poll, recopy=args.recopy)
    interrupted = False
    code = 1
    try:
        code = action(output, bedrock, evidence, options)
    except KeyboardInterrupt:
        interrupted = True
        console.print(
            "[yellow]stopped following; what was started goes on in AWS[/yellow] (runner.model_import status)"
        )
    except ImportFailed as failure:
        evidence.file.failure = str(failure)
        console.print(f"[red]failed:[/red] {failure}")
    except RunnerError as error:
        evidence.file.refused = str(error)
        evidence.finish()
        print(f"evidence: {evidence.path}")  # the refusal goes on up: its line is the one that counts
        raise
    except Exception as error:
        if as_fault(error) is None:
            raise  # a bug keeps its traceback
        evidence.file.failure = describe(error)
        console.print(f"[red]failed:[/red] {describe(error)}")
    evidence.finish(interrupted=interrupted)
    evidence.announce(interrupted=interrupted)
    return code


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
