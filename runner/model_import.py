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
import time
from typing import Any

from catalog import BackendKind, get_backend
from catalog.contract import BackendOutput
from runner.cli.options import add_aws_switch, add_outputs_and_region, add_results_dir
from runner.cli.session import main_guard
from runner.cloud.aws import boto_client, check_region, credentials_configured
from runner.cloud.model_import import (
    ARCHITECTURES_SOURCE,
    PRICE_LINE,
    ImportFailed,
    check_architectures,
    check_output,
    copy_weights,
    delete_imported_model,
    find_imported_model,
    follow_import,
    job_name,
    model_record,
    model_units,
    read_architectures,
    running_import,
    start_import,
    weights_in_bucket,
    weights_uri,
)
from runner.cloud.outputs import OutputsReading, read_outputs_file, read_stack_outputs
from runner.core.console import console
from runner.core.errors import RunnerError, as_fault, describe
from runner.core.evidence import Evidence


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
    if not (args.aws or credentials_configured()):
        raise RunnerError("runner.model_import works through the AWS API, and no AWS credentials are configured")
    if args.region:
        check_region(args.region)
    get_backend(args.backend)  # an unknown backend fails before any AWS call
    reading = read_outputs_file(args.outputs_file) if args.outputs_file else read_stack_outputs(args.region)
    output = find_output(args.backend, reading)
    evidence = Evidence(
        "model_import", {"action": args.action, "backend": output.name, "recopy": args.recopy}, args.results_dir
    )
    evidence.data["backends"] = [output.to_json()]
    evidence.data["stack_outputs"] = {"source": reading.source, "outputs": reading.raw}
    for line in reading.problems:
        evidence.notice(line)
    bedrock = boto_client("bedrock", output.region, 30)
    action = {"import": import_model, "status": show_status, "delete": delete_model}[args.action]
    interrupted = False
    code = 1
    try:
        code = action(args, output, bedrock, evidence)
    except KeyboardInterrupt:
        interrupted = True
        console.print(
            "[yellow]stopped following; what was started goes on in AWS[/yellow] (runner.model_import status)"
        )
    except ImportFailed as failure:
        evidence.data["failure"] = str(failure)
        console.print(f"[red]failed:[/red] {failure}")
    except RunnerError as error:
        evidence.data["refused"] = str(error)
        print(f"evidence: {evidence.finish()}")
        raise
    except Exception as error:
        if as_fault(error) is None:
            raise  # a bug keeps its traceback
        evidence.data["failure"] = describe(error)
        console.print(f"[red]failed:[/red] {describe(error)}")
    print(f"evidence: {evidence.finish(interrupted=interrupted)}")
    if interrupted:
        raise KeyboardInterrupt
    return code


def import_model(args: argparse.Namespace, output: BackendOutput, bedrock: Any, evidence: Evidence) -> int:
    existing = find_imported_model(bedrock, output.model_name)
    if existing is not None:
        evidence.add_record(model_record(existing) | {"step": "model", "outcome": "already imported"})
        console.print(
            f"{output.model_name} is already imported in {output.region}: no import job started "
            "(runner.model_import delete, then import, to import it again)"
        )
        print_model(existing)
        return 0
    s3 = boto_client("s3", output.region, 30)
    uri = weights_uri(output)
    job = running_import(bedrock, output.model_name)
    if job is not None:
        console.print(f"an import job for {output.model_name} is running: following {job['jobName']}")
        job_arn, name = job["jobArn"], job["jobName"]
        evidence.add_record({"step": "import", "job_arn": job_arn, "job_name": name, "outcome": "followed"})
    else:
        copy_if_needed(args, output, s3, evidence)
        architectures = read_architectures(s3, output)
        evidence.add_record({"step": "architecture", "architectures": architectures, "source": ARCHITECTURES_SOURCE})
        check_architectures(architectures, f"{uri}config.json")
        name = job_name(output.model_name)
        console.print(f"importing {uri} as {output.model_name} in {output.region} (job {name}) …")
        job_arn = start_import(bedrock, output, name)
        evidence.add_record({"step": "import", "job_arn": job_arn, "job_name": name, "outcome": "started"})
    started = time.monotonic()
    try:
        job = follow_import(bedrock, job_arn, poll_s=args.poll)
    except ImportFailed as failure:
        evidence.add_record({"step": "import", "job_arn": job_arn, "status": "Failed", "failure": str(failure)})
        raise
    evidence.add_record(
        {
            "step": "import",
            "job_arn": job_arn,
            "job_name": name,
            "status": job.get("status"),
            "followed_s": round(time.monotonic() - started, 3),
            "created": str(job.get("creationTime")) if job.get("creationTime") else None,
            "ended": str(job.get("endTime")) if job.get("endTime") else None,
        }
    )
    model = find_imported_model(bedrock, job.get("importedModelArn") or output.model_name)
    if model is None:
        raise ImportFailed(f"import job {name} completed, but there is no imported model {output.model_name}")
    evidence.add_record(model_record(model) | {"step": "model", "outcome": "imported"})
    print_model(model)
    return 0


def copy_if_needed(args: argparse.Namespace, output: BackendOutput, s3: Any, evidence: Evidence) -> None:
    uri = weights_uri(output)
    present = [] if args.recopy else weights_in_bucket(s3, output)
    if present:
        console.print(f"the weights are in {uri} ({len(present)} files): copy skipped (--recopy to copy again)")
        evidence.add_record({"step": "copy", "outcome": "skipped", "files": present})
        return
    console.print(f"copying {output.model_id} into {uri} with CodeBuild project {output.weights_job} …")
    started = time.monotonic()
    record = copy_weights(
        boto_client("codebuild", output.region, 30),
        output,
        poll_s=args.poll,
        force=args.recopy,
        on_phase=lambda phase: console.print(
            f"  {phase['phaseType']:<16} {phase['phaseStatus']:<10} ({time.monotonic() - started:.0f} s in)"
        ),
        logs=boto_client("logs", output.region, 30),
    )
    present = weights_in_bucket(s3, output)
    evidence.add_record({"step": "copy", "outcome": "copied", "files": present} | record)
    if not present:
        raise ImportFailed(
            f"weights copy {record['build_id']} succeeded, but {uri} holds no config.json and safetensors"
        )


def show_status(args: argparse.Namespace, output: BackendOutput, bedrock: Any, evidence: Evidence) -> int:
    uri = weights_uri(output)
    present = weights_in_bucket(boto_client("s3", output.region, 30), output)
    job = running_import(bedrock, output.model_name)
    model = find_imported_model(bedrock, output.model_name)
    evidence.add_record(
        {
            "step": "status",
            "weights": present,
            "running_job": job.get("jobArn") if job else None,
            "model": model_record(model) if model else None,
        }
    )
    print(f"weights: {len(present)} files in {uri}" if present else f"weights: not in {uri}")
    if job is not None:
        print(f"import job running: {job['jobName']} (started {job.get('creationTime')})")
    if model is None:
        print(f"imported model: none named {output.model_name} in {output.region}")
    else:
        print_model(model)
    return 0


def delete_model(args: argparse.Namespace, output: BackendOutput, bedrock: Any, evidence: Evidence) -> int:
    model = find_imported_model(bedrock, output.model_name)
    job = running_import(bedrock, output.model_name)
    if job is not None:
        console.print(
            f"[yellow]note:[/yellow] import job {job['jobName']} is still running (it cannot be stopped): "
            "delete again once it ends"
        )
    if model is None:
        evidence.add_record({"step": "delete", "model_name": output.model_name, "outcome": "none to delete"})
        print(f"nothing to delete: no imported model {output.model_name} in {output.region}")
        return 0
    delete_imported_model(bedrock, model["modelArn"])
    evidence.add_record(model_record(model) | {"step": "delete", "outcome": "deleted"})
    print(f"deleted imported model {output.model_name} ({model['modelArn']})")
    print(f"the weights stay in {weights_uri(output)} until the stack goes (runner.sweep --delete empties the bucket)")
    return 0


def print_model(model: dict[str, Any]) -> None:
    units = model_units(model)
    print(f"imported model: {model['modelArn']}")
    print(f"custom model units: {units} per model copy" if units is not None else "custom model units: not reported")
    print(f"price: {PRICE_LINE}")


def main() -> None:
    main_guard(run)


if __name__ == "__main__":
    main()
