"""A CodeBuild project started by EventBridge, and by nothing that may change what it runs.

The rule's role may start that one project, and is refused a start that overrides anything the
project fixes: its buildspec, source, environment (image, privileged mode, variables), service
role, artifacts, cache, logs or key (CodeBuild's StartBuild condition keys, Service Authorization
Reference "Actions, resources, and condition keys for AWS CodeBuild"; `codebuild:source.buildspec`
takes only the Null operator, as the CodeBuild user guide's "Condition keys for the API" says). The
target sends an empty request (a rule with no input would send the event itself). No instance role
of the app may start a build at all (tests/cdk/test_policies.py).
"""

from __future__ import annotations

from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from constructs import Construct

from inference_constructs.service_roles import service_role

# The stack events that start a build (CloudFormation sends them to the default event bus).
STACK_EVENTS = ("CREATE_COMPLETE", "UPDATE_COMPLETE")
# Every part of a StartBuild request that could change what the project runs or as whom.
OVERRIDE_KEYS = (
    "codebuild:source.buildspec",
    "codebuild:source",
    "codebuild:secondarySources",
    "codebuild:environment",
    "codebuild:serviceRole",
    "codebuild:artifacts",
    "codebuild:secondaryArtifacts",
    "codebuild:cache",
    "codebuild:logsConfig",
    "codebuild:encryptionKey",
)


def deny_overrides(role: iam.IRole, project: codebuild.IProject) -> None:
    """StartBuild on `project` refused whenever the request carries any override."""
    for index, key in enumerate(OVERRIDE_KEYS):
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid=f"NoOverride{index}",
                effect=iam.Effect.DENY,
                actions=["codebuild:StartBuild"],
                resources=[project.project_arn],
                conditions={"Null": {key: "false"}},
            )
        )


def started_by_events(
    scope: Construct, construct_id: str, project: codebuild.Project, pattern: events.EventPattern, description: str
) -> events.Rule:
    role = service_role(scope, f"{construct_id}Role", "events.amazonaws.com", f"Starts {description.lower()}")
    # The target grants the role StartBuild on this one project; the denials take away every override.
    deny_overrides(role, project)
    return events.Rule(
        scope,
        construct_id,
        description=description,
        event_pattern=pattern,
        # An empty request: the project as it is (not the event itself as StartBuild's request).
        targets=[targets.CodeBuildProject(project, event_role=role, event=events.RuleTargetInput.from_object({}))],
    )
