"""Measuring requests and load: what a timed request asks (`records`; what it records is
`runner.core.records`), a timed client per
provider (`openai_sync`, `openai_async`, `bedrock`, `bedrock_import`, `sagemaker` with
serverless, `sagemaker_async`, built by `clients`) over the measuring core's stream reading
(`runner.timing`, which the in-region kit ships too), the levels on its one load engine (`load`),
health waits (`health`), the benchmark itself (`benchmark`) and a transform job measured
(`transform_job`). The latency and
level summaries of what was recorded are `runner.figures`; what it costs is `runner.costing`.

The client keeps itself out of the figures: one reused connection per backend, warmed by the
same untimed "Hi" generation for every provider; timestamps taken as chunks arrive; token counts
from the server's usage (a client-side count is only a marked fallback). A stream that ends
without a finish reason, with an abnormal one, or with no output at all is an error.

Imports `runner.cloud` (AWS clients, readiness), `runner.costing` (prices), `runner.figures`,
`runner.workloads` and `runner.core`; never `servers`.
"""

from runner.measure.clients import timed_client_for
from runner.measure.records import ChatRequest, TimedClient, warm_up

__all__ = ["ChatRequest", "TimedClient", "timed_client_for", "warm_up"]
