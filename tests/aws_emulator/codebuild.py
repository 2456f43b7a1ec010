"""CodeBuild that builds: moto's CloudFormation does not create AWS::CodeBuild::Project (its Ref
comes back as "None"), and moto's builds succeed at once without running anything. Here a project
created by CloudFormation is registered (in moto's backend, so its own calls answer) with what a
build needs, and StartBuild runs it as CodeBuild would:

- DOWNLOAD_SOURCE: the project's S3 source (the CDK asset the deploy uploaded into the emulated
  bootstrap bucket), unzipped into the build's own folder;
- BUILD: each buildspec command under bash, in that folder, with the project's environment
  variables (and the StartBuild overrides), CODEBUILD_BUILD_ID and the region, the real AWS CLI
  against the emulator, and the Docker stand-in (tests/host/docker.py: `build` succeeds or fails
  as `Emulator.build_behaviour[folder]` says, `push` lands in the emulated ECR);
- phases and statuses as BatchGetBuilds reports them (a failed command: phase BUILD FAILED with
  COMMAND_EXECUTION_ERROR, build FAILED), and every output line in the project's CloudWatch Logs
  group, stream = the build id's UUID, as CodeBuild writes it;
- a project's ConcurrentBuildLimit: a StartBuild while that many run is refused (CodeBuild's
  guide: "builds return an error"; the exception's name here, AccountLimitExceededException, is
  the account-level one: the project-level name is not documented);
- a build that outlasts the flow: the weights copy downloads gigabytes for minutes in AWS, so in a
  flow that takes seconds here it is started (StartBuild answers, BatchGetBuilds says IN_PROGRESS)
  and still running when the flow ends, unless a test releases it (`builds.release(project)`, which
  runs the held builds and every later one). A flow that is not about the copy does not pay for it
  (docs/tests.md: what it saves);
- an account whose concurrent-build quota is 0 in a region (`Emulator.refuse_builds(region)`):
  every StartBuild there is refused as new accounts see it, `AccountLimitExceededException:
  Cannot have more than 0 builds in queue for the account` (awslabs/landing-zone-accelerator-on-
  aws#1013, rebuy-de/aws-nuke#1209), the API's and EventBridge's starts alike.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inference_constructs.weights_copy import COPY_PROJECT

HOST_BIN = Path(__file__).resolve().parents[1] / "host" / "bin"
# The weights copy: held unless released.
HELD_BY_DEFAULT = (COPY_PROJECT,)
PROJECT_ROOT = Path(__file__).resolve().parents[2]
PHASES = ("SUBMITTED", "QUEUED", "PROVISIONING", "DOWNLOAD_SOURCE", "INSTALL", "PRE_BUILD", "BUILD", "POST_BUILD")
PHASES_AFTER = ("UPLOAD_ARTIFACTS", "FINALIZING", "COMPLETED")


@dataclass
class Project:
    account: str
    region: str
    name: str
    properties: dict[str, Any]

    @property
    def arn(self) -> str:
        return f"arn:aws:codebuild:{self.region}:{self.account}:project/{self.name}"

    @property
    def limit(self) -> int | None:
        value = self.properties.get("ConcurrentBuildLimit")
        return int(value) if value else None

    def variables(self) -> dict[str, str]:
        return {v["Name"]: str(v["Value"]) for v in self.properties["Environment"].get("EnvironmentVariables", [])}

    @property
    def log_group(self) -> str | None:
        return ((self.properties.get("LogsConfig") or {}).get("CloudWatchLogs") or {}).get("GroupName")


@dataclass
class Build:
    project: Project
    number: int
    overrides: dict[str, str]
    id: str = ""
    status: str = "IN_PROGRESS"
    current_phase: str = "SUBMITTED"
    phases: list[dict[str, Any]] = field(default_factory=list)
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    ended: datetime | None = None
    lines: list[str] = field(default_factory=list)
    # Its commands have been set going (a held build's have not).
    launched: bool = False

    def __post_init__(self) -> None:
        self.id = f"{self.project.name}:{uuid.uuid4()}"

    @property
    def stream(self) -> str:
        return self.id.split(":", 1)[1]

    def to_api(self) -> dict[str, Any]:
        logs: dict[str, Any] = {"status": "ENABLED"}
        if self.project.log_group:
            logs |= {
                "groupName": self.project.log_group,
                "streamName": self.stream,
                "deepLink": f"https://console.aws.amazon.com/cloudwatch/home?region={self.project.region}"
                f"#logEvent:group={self.project.log_group};stream={self.stream}",
            }
        build: dict[str, Any] = {
            "id": self.id,
            "arn": f"arn:aws:codebuild:{self.project.region}:{self.project.account}:build/{self.id}",
            "buildNumber": self.number,
            "projectName": self.project.name,
            "buildStatus": self.status,
            "currentPhase": self.current_phase,
            "startTime": self.started.timestamp(),
            "phases": list(self.phases),
            "logs": logs,
            "buildComplete": self.status != "IN_PROGRESS",
            "environment": {
                "environmentVariables": [
                    {"name": k, "value": v, "type": "PLAINTEXT"} for k, v in self.environment_variables().items()
                ]
            },
        }
        if self.ended:
            build["endTime"] = self.ended.timestamp()
        return build

    def environment_variables(self) -> dict[str, str]:
        return self.project.variables() | self.overrides


class Builds:
    """The emulator's CodeBuild: projects from CloudFormation, builds that run."""

    def __init__(self, emulator: Any) -> None:
        self.emulator = emulator
        self.projects: dict[tuple[str, str], Project] = {}
        self.records: dict[str, Build] = {}
        self.threads: list[threading.Thread] = []
        # Regions whose account-level concurrent-build quota is 0.
        self.refused_regions: set[str] = set()
        # Projects whose builds outlast a flow: started, never run until released.
        self.held: set[str] = set(HELD_BY_DEFAULT)
        self.lock = threading.Lock()
        self.cfn_model: type | None = None

    def clear(self) -> None:
        self.projects.clear()
        self.records.clear()
        self.refused_regions.clear()
        self.held = set(HELD_BY_DEFAULT)

    def release(self, project: str) -> None:
        """Run the held builds of `project` now, and every later one as it starts."""
        self.held.discard(project)
        for build in [b for b in self.records.values() if b.project.name == project and not b.launched]:
            self.launch(build)

    def launch(self, build: Build) -> None:
        build.launched = True
        thread = threading.Thread(target=self.run, args=(build,), name=build.id, daemon=True)
        self.threads.append(thread)
        thread.start()

    def wait(self, timeout_s: float = 60) -> None:
        for thread in list(self.threads):
            thread.join(timeout=timeout_s)

    def running(self, region: str, name: str) -> list[Build]:
        return [
            b
            for b in self.records.values()
            if (b.project.region, b.project.name) == (region, name) and b.status == "IN_PROGRESS"
        ]

    def for_project(self, region: str, name: str) -> list[Build]:
        builds = [b for b in self.records.values() if (b.project.region, b.project.name) == (region, name)]
        return sorted(builds, key=lambda b: b.number, reverse=True)

    def start(self, region: str, name: str, overrides: dict[str, str]) -> Build:
        from moto.core.exceptions import JsonRESTError

        project = self.projects[(region, name)]
        if region in self.refused_regions:
            raise JsonRESTError(
                "AccountLimitExceededException", "Cannot have more than 0 builds in queue for the account"
            )
        with self.lock:
            if project.limit is not None and len(self.running(region, name)) >= project.limit:
                raise JsonRESTError(
                    "AccountLimitExceededException",
                    f"Cannot have more than {project.limit} builds in queue for the project {name}",
                )
            build = Build(project, len(self.for_project(region, name)) + 1, overrides)
            self.records[build.id] = build
        if name not in self.held:
            self.launch(build)
        return build

    # --- running a build ---------------------------------------------------------------------

    def phase(self, build: Build, name: str, status: str = "SUCCEEDED", started: float | None = None, **extra) -> None:
        now = time.time()
        entry = {
            "phaseType": name,
            "phaseStatus": status,
            "startTime": started or now,
            "endTime": now,
            "durationInSeconds": int(now - (started or now)),
        } | extra
        build.phases.append(entry)
        build.current_phase = name

    def log(self, build: Build, text: str) -> None:
        from moto.logs.models import logs_backends

        build.lines.extend(text.splitlines())
        group = build.project.log_group
        if not group or not text.strip():
            return
        backend = logs_backends[build.project.account][build.project.region]
        with contextlib.suppress(Exception):
            backend.create_log_stream(group, build.stream)
        events = [{"timestamp": int(time.time() * 1000), "message": line} for line in text.splitlines() if line]
        if events:
            from moto.logs.exceptions import ResourceNotFoundException

            # A build still running when its stack's log group is deleted (a teardown mid-build):
            # its lines are lost, as CodeBuild's are; the build itself goes on.
            with contextlib.suppress(ResourceNotFoundException):
                backend.put_log_events(group, build.stream, events)

    def source(self, build: Build, folder: Path) -> None:
        from moto.s3.models import s3_backends

        if "Location" not in build.project.properties["Source"]:
            return  # NO_SOURCE (the weights copy): the buildspec is all there is
        location = build.project.properties["Source"]["Location"]
        bucket, _, key = location.partition("/")
        data = s3_backends[build.project.account]["aws"].get_object(bucket, key).value
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(folder)

    def run(self, build: Build) -> None:
        project = build.project
        scratch = self.emulator.scratch / "builds" / build.stream
        source = scratch / "src"
        source.mkdir(parents=True)
        for name in PHASES[:3]:
            self.phase(build, name)
        started = time.time()
        try:
            self.source(build, source)
        except Exception as error:
            self.phase(
                build,
                "DOWNLOAD_SOURCE",
                "FAILED",
                started,
                contexts=[{"statusCode": "CLIENT_ERROR", "message": str(error)}],
            )
            self.finish(build, "FAILED")
            return
        self.phase(build, "DOWNLOAD_SOURCE", started=started)
        spec = json.loads(project.properties["Source"]["BuildSpec"])
        variables = build.environment_variables()
        folder = variables.get("IMAGE_FOLDER", "")
        env = {
            "PATH": os.pathsep.join([str(HOST_BIN), str(Path(sys.executable).parent), "/usr/bin:/bin"]),
            "HOME": str(scratch),
            "HF_HOME": str(scratch / "hf-home"),
            "TMPDIR": str(scratch),
            "HOST_STATE": str(scratch / "docker"),
            "HOST_PYTHON": sys.executable,
            "PYTHONPATH": str(PROJECT_ROOT),
            "REGISTRY_DIR": str(self.emulator.scratch / "registry"),
            "BUILD_BEHAVIOUR": self.emulator.build_behaviour.get(folder, "ok"),
            "CODEBUILD_BUILD_ID": build.id,
            "CODEBUILD_BUILD_NUMBER": str(build.number),
            "CODEBUILD_SRC_DIR": str(source),
            "CODEBUILD_BUILD_SUCCEEDING": "1",
            **self.emulator.host_env(),
            "AWS_REGION": project.region,
            "AWS_DEFAULT_REGION": project.region,
            **variables,
        }
        failed = False
        for name in ("install", "pre_build", "build", "post_build"):
            commands = (spec.get("phases", {}).get(name) or {}).get("commands", [])
            started = time.time()
            context = None
            for command in commands if not (failed and name != "post_build") else []:
                result = subprocess.run(
                    ["bash", "-c", command],
                    cwd=source,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                    check=False,
                )
                self.log(build, result.stdout + result.stderr)
                if result.returncode:
                    context = {
                        "statusCode": "COMMAND_EXECUTION_ERROR",
                        "message": f"Error while executing command: {command[:80]}. Reason: exit status {result.returncode}",
                    }
                    failed = True
                    env["CODEBUILD_BUILD_SUCCEEDING"] = "0"
                    break
            self.phase(
                build,
                name.upper(),
                "FAILED" if context else "SUCCEEDED",
                started,
                **({"contexts": [context]} if context else {}),
            )
        for name in PHASES_AFTER:
            self.phase(build, name)
        self.finish(build, "FAILED" if failed else "SUCCEEDED")

    def finish(self, build: Build, status: str) -> None:
        build.ended = datetime.now(UTC)
        build.status = status


def register_projects(builds: Builds) -> None:
    """Teach moto's CloudFormation AWS::CodeBuild::Project (a subclass registers itself)."""
    from moto.cloudformation import parsing
    from moto.codebuild.models import codebuild_backends
    from moto.core.common_models import CloudFormationModel

    class CodeBuildProject(CloudFormationModel):
        def __init__(self, name: str, arn: str) -> None:
            self.name, self.arn = name, arn

        @staticmethod
        def cloudformation_name_type() -> str:
            return "Name"

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::CodeBuild::Project"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        @property
        def physical_resource_id(self) -> str:
            return self.name

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return self.arn

        @classmethod
        def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
            properties = cloudformation_json["Properties"]
            codebuild_backends[account_id][region_name].create_project(
                project_name=resource_name,
                description=properties.get("Description"),
                project_source=properties["Source"],
                artifacts=properties.get("Artifacts", {"Type": "NO_ARTIFACTS"}),
                environment=properties["Environment"],
                service_role=properties.get("ServiceRole", ""),
                tags=None,
                cache=None,
                timeout=properties.get("TimeoutInMinutes"),
                queued_timeout=None,
                source_version=None,
                logs_config=None,
                vpc_config=None,
            )
            project = Project(account_id, region_name, resource_name, properties)
            builds.projects[(region_name, resource_name)] = project
            return cls(resource_name, project.arn)

        @classmethod
        def update_from_cloudformation_json(
            cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
        ):
            project = builds.projects[(region_name, original_resource.name)]
            project.properties = cloudformation_json["Properties"]
            return original_resource

        @classmethod
        def delete_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name):
            codebuild_backends[account_id][region_name].delete_project(resource_name)
            builds.projects.pop((region_name, resource_name), None)

    # moto finds models through CloudFormationModel.__subclasses__(), which holds its classes
    # weakly: keep this one alive (the newest of those registered wins the model map).
    builds.cfn_model = CodeBuildProject
    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()


def install(emulator: Any) -> Callable[[], None]:
    from moto.codebuild.responses import CodeBuildResponse
    from moto.core.responses import ActionResult

    builds = emulator.builds
    register_projects(builds)
    originals = {
        n: getattr(CodeBuildResponse, n) for n in ("start_build", "batch_get_builds", "list_builds_for_project")
    }

    def start_build(response):
        name = response._get_param("projectName")
        if (response.region, name) not in builds.projects:
            return originals["start_build"](response)
        overrides = {v["name"]: v["value"] for v in response._get_param("environmentVariablesOverride") or []}
        return ActionResult({"build": builds.start(response.region, name, overrides).to_api()})

    def batch_get_builds(response):
        ids = response._get_param("ids") or []
        return ActionResult({"builds": [builds.records[i].to_api() for i in ids if i in builds.records]})

    def list_builds_for_project(response):
        name = response._get_param("projectName")
        ordered = [b.id for b in builds.for_project(response.region, name)]
        if response._get_param("sortOrder") == "ASCENDING":
            ordered.reverse()
        return ActionResult({"ids": ordered})

    CodeBuildResponse.start_build = start_build
    CodeBuildResponse.batch_get_builds = batch_get_builds
    CodeBuildResponse.list_builds_for_project = list_builds_for_project

    # The app's repositories are EmptyOnDelete (template tests assert it): deleted with their images.
    from moto.ecr.models import Repository, ecr_backends

    original_delete = Repository.delete

    def delete_repository(repository, account_id, region_name):
        ecr_backends[account_id][region_name].delete_repository(repository.name, force=True)

    Repository.delete = delete_repository

    def undo() -> None:
        for name, method in originals.items():
            setattr(CodeBuildResponse, name, method)
        Repository.delete = original_delete

    return undo
