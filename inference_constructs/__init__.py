"""Reusable L3 constructs for the inference backends.

Named `inference_constructs`, not `constructs`: a top-level `constructs/` package would shadow
the `constructs` library that aws-cdk-lib itself imports (the app folder is first on sys.path).
"""

from inference_constructs.instance_role import ServerInstanceRole
from inference_constructs.model_server import ModelServer
from inference_constructs.ssm_only_network import SsmOnlyNetwork
from inference_constructs.vllm_endpoint import VllmSageMakerEndpoint

__all__ = ["ModelServer", "ServerInstanceRole", "SsmOnlyNetwork", "VllmSageMakerEndpoint"]
