"""The weights copy (`weights_copy.sh`, run by CodeBuild): what the store stack and the Bedrock
import stack both run to bring a model from the Hugging Face hub into S3 inside AWS."""

from pathlib import Path

COPY_SCRIPT = Path(__file__).with_name("weights_copy.sh")
# The huggingface_hub release the copy installs: the one the vLLM tier pins (constraints-vllm.txt).
HF_HUB_VERSION = "2.4.0"
# The copy's CodeBuild project in each region's store stack (its name fixed: the servers' outputs
# and runner.up name it).
COPY_PROJECT = "inference-weights-copy"
