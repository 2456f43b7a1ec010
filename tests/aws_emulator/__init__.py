"""AWS on loopback for the app's real CDK CLI cycle and its whole server lifecycle: moto in server
mode, with each of its gaps filled by a module here that holds what AWS would hold (or, where
moto stores but never acts, does what AWS would do), named as a gap in the module and its tests:

- `parameters`: the DLAMI and Neuron AMI parameters; CloudFormation's map of parameter Tags;
  who wrote each readiness parameter (the user agent's exec-env), so a test can prove only the
  servers and the image builds write readiness;
- `capacity`: launches refused per region, with the failed scaling activities AWS reports;
- `cloudformation`: a stack update that keeps a parameter's previous value (the CDK CLI's
  UsePreviousValue) when the stack was created with its default;
- `sagemaker`: CloudFormation's endpoint keeps the EndpointName the template gives; the app's
  ml.g5/ml.g6/ml.inf2/ml.trn1 endpoint instance types;
- `sagemaker_runtime`: serverless, asynchronous and transform-job answers from a real
  OpenAI-compatible server on loopback (`model_servers`, `transform_server`), serverless
  MaxConcurrency throttling and cold starts, async endpoints held at zero, StopTransformJob;
- `inference_components`: SageMaker inference components (create, describe, update, delete, list,
  CloudFormation's AWS::SageMaker::InferenceComponent), an endpoint config without a model, routing
  values and the refusals AWS makes, and Application Auto Scaling's DesiredCopyCount dimension;
  `sagemaker_runtime` serves them (InvokeEndpoint and InvokeEndpointWithResponseStream naming the
  component, zero copies and the scale from zero);
- `component_fleet`: a component's copies as local servers behind SageMaker's routing (`routing`),
  its copy count the router's;
- `component_scaling`: Application Auto Scaling's target tracking of a component's copies on
  ConcurrentRequestsPerCopy (which moto stores and never runs), on a scaled-down clock, with the
  router's local servers (`routing`) following the copies;
- `sessions`: Session Manager (StartSession, TerminateSession, DescribeSessions,
  DescribeInstanceInformation);
- `codebuild`: CloudFormation's AWS::CodeBuild::Project, and builds that run: the buildspec under
  bash with the real AWS CLI against the emulator and a Docker stand-in, pushing into the
  emulated ECR, with phases, statuses and logs in CloudWatch Logs; one build at a time;
- `instances`: every instance of the app boots its launch template's user data on a stand-in
  host (tests/host), and terminating it shuts that host down;
- `autoscaling`: stack updates change a group in place (moto deletes and recreates it), with the
  rolling update and IgnoreUnmodifiedGroupSizeProperties; scheduled actions update, and fire
  when a test says their time has come;
- `schedules`: EventBridge rules on CloudFormation's stack events and EventBridge Scheduler
  schedules, which moto never fires (Scheduler resources it does not even create): fired by hand,
  from the deployed template.

`s3_policies`: a bucket policy's TLS-only Deny applies to plain-HTTP requests only, as S3 applies it
(moto ignores conditions and denies every request).

And `codebuild` deletes an ECR repository with its images, as EmptyOnDelete does (moto refuses a
repository that holds images).
"""

from tests.aws_emulator.account import ACCOUNT, REGIONS
from tests.aws_emulator.server import Emulator, emulated_aws

__all__ = ["ACCOUNT", "REGIONS", "Emulator", "emulated_aws"]
