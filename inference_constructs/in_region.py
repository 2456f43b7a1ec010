"""The in-region bench of a stack's EC2 servers: the kit the instance runs and the bucket its
evidence goes to (`python -m runner.bench --in-region`).

The kit (`bench_kit/`, a stdlib-only client: its docstring says why) is an S3 asset of the stack,
like the image build's source: its folder is assembled here at synth (`assemble_kit`: the kit's
own files at its root, the runner's measuring core `runner/timing` beside them as the package
`timing`, copied, never imported: the CDK side does not import the runner), `cdk deploy` uploads
its zip to the bootstrap bucket, and each server's role may read that one object. Run Command's inline output is cut at about 24 KB,
so the kit's records go to a bucket the stack owns (each stack self-contained: no stack reads
another's), under `in-region/<backend>/<run>/`; each server's role may put objects under its own
backend's prefix only, and get each run's `requests.json.gz` there (a workload's request bodies:
more than Run Command's parameters carry), and nothing else on the bucket. The runner reads a run's objects back into
its evidence and then deletes them.

The bucket: S3-managed encryption, every public access blocked, TLS only, objects expired after
a week, removed by `cdk destroy` (RemovalPolicy DESTROY; no auto-delete, which would need a
Lambda). CloudFormation deletes only an empty bucket: the runner empties what it wrote, the
lifecycle rule what an interrupted run left, and `runner.sweep --delete` empties the app's
buckets (the stack's `app` tag reaches this one too) before it deletes their stacks. Nothing
here touches the launch template: a change of the kit replaces no server.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from pathlib import Path

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from inference_constructs.nag import acknowledge

KIT_DIR = Path(__file__).with_name("bench_kit")
# The runner's measuring core, which the kit imports as a package of this name.
CORE_DIR = Path(__file__).resolve().parents[1] / "runner" / "timing"
CORE_PACKAGE = "timing"
EVIDENCE_PREFIX = "in-region/"
EVIDENCE_DAYS = 7
# The one object of a run the instance reads: a workload's request bodies, gzipped JSON
# (runner/cloud/reach/in_region.py REQUESTS_FILE).
REQUESTS_OBJECT = "requests.json.gz"


def assemble_kit(folder: Path) -> Path:
    """The kit's asset folder in `folder`: the kit's own modules at its root (`__main__.py`, so
    `python3 kit.zip` runs it), the measuring core's beside them as the package `timing`; source
    files only (no bytecode a local run left)."""
    (folder / CORE_PACKAGE).mkdir(parents=True)
    for source, into in ((KIT_DIR, folder), (CORE_DIR, folder / CORE_PACKAGE)):
        for module in sorted(source.glob("*.py")):
            shutil.copyfile(module, into / module.name)
    return folder


@functools.cache
def staged_kit() -> tempfile.TemporaryDirectory:
    """The kit's folder assembled once for this synthesis (removed when the process ends; the CDK
    copies an asset into the cloud assembly as it stages it)."""
    staged = tempfile.TemporaryDirectory(prefix="bench-kit-")
    assemble_kit(Path(staged.name))
    return staged


def evidence_prefix(backend: str) -> str:
    """Where one backend's in-region runs write (a run adds its own folder under it)."""
    return f"{EVIDENCE_PREFIX}{backend}/"


class InRegionBench(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.kit = s3_assets.Asset(self, "Kit", path=staged_kit().name)
        self.kit_url = self.kit.s3_object_url
        self.bucket = s3.Bucket(
            self,
            "Evidence",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    expiration=Duration.days(EVIDENCE_DAYS), abort_incomplete_multipart_upload_after=Duration.days(1)
                )
            ],
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge(
            self.bucket,
            "AwsSolutions-S1",
            "In-region bench records on their way to the runner, deleted once read and expired after a week; "
            "access logs would need a second bucket that outlives cdk destroy.",
        )

    def allow(self, role: iam.Role, backend: str) -> None:
        """The server's role: read the kit (that one object), write under its own backend's prefix
        only (the result out), and read each run's request file there (the workload's bodies in)."""
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadTheBenchKit",
                actions=["s3:GetObject"],
                resources=[self.kit.bucket.arn_for_objects(self.kit.s3_object_key)],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteInRegionEvidence",
                actions=["s3:PutObject"],
                resources=[self.bucket.arn_for_objects(f"{evidence_prefix(backend)}*")],
            )
        )
        # A workload's request bodies, which the runner puts in the run's folder (more than Run
        # Command's parameters carry): that one object of each run, nothing else of the prefix.
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadInRegionRequests",
                actions=["s3:GetObject"],
                resources=[self.bucket.arn_for_objects(f"{evidence_prefix(backend)}*/{REQUESTS_OBJECT}")],
            )
        )
        stack = self.bucket.stack
        bucket_id = stack.resolve(stack.get_logical_id(self.bucket.node.default_child))
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{evidence_prefix(backend)}*]",
            "Puts objects under this backend's own in-region prefix of the stack's evidence bucket; run folders "
            "are named at run time.",
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{evidence_prefix(backend)}*/{REQUESTS_OBJECT}]",
            "Gets the one request file of each run under this backend's own prefix; run folders are named at run time.",
        )
