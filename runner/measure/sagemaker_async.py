"""Timed chat against a SageMaker asynchronous endpoint: the request goes through S3 and a queue.

One request: the OpenAI chat body (`stream: false`) is written as a JSON object to
`s3://<bucket>/<input prefix><uuid>.json`; InvokeEndpointAsync queues it (InputLocation, the same
uuid as InferenceId, ContentType application/json, InvocationTimeoutSeconds, and RequestTTLSeconds
so a request the runner gave up on expires in the queue) and answers at once with the
OutputLocation the result will be written to and the FailureLocation an error would be; the client
then polls S3 HeadObject on both, with a short growing backoff, until one exists or the time is up.
The result is one whole chat completion (tokens from its usage); a failure object's text becomes an
`AsyncInferenceFailed` fault, one line. The input object is deleted once the request has ended (the
bucket's lifecycle rule removes anything left over).

What it records, and how exact each figure is:

- `e2e_s`, queue to result: from the InvokeEndpointAsync call to the first HeadObject that finds the
  result. It includes the S3 write of the result and up to one poll interval of lateness
  (`phases["poll_s"]`, the last interval waited); the input upload before the call is not in it.
- `cold_start`: True when DescribeEndpoint said CurrentInstanceCount == 0 just before the request
  was queued (the endpoint autoscaled to zero); False when an instance existed.
- `phases["leave_zero_s"]` (cold requests only): from queueing to the first DescribeEndpoint that
  reports an instance, polled with the result: an upper bound by up to one poll interval. It is
  SageMaker's own scale-out from zero (the HasBacklogWithoutCapacity alarm, the instance launch,
  the container's start and its /ping), not the model's work. Where the result is found before
  any DescribeEndpoint reports an instance (CurrentInstanceCount can lag the instance, and a short
  answer can fit between two polls), `leave_zero_s` is the whole `e2e_s` and `work_s` is 0: the
  split is finer than the polling, and no tokens per second of the work is claimed for it.
- `phases["queued_s"]` (cold requests only): the time the request must have waited in the queue,
  taken as `leave_zero_s`: a lower bound, since no API says when an instance picked a request up.
  For a request that found an instance, the queue wait is not knowable and is left out.
- `phases["work_s"]`: the part after an instance exists (`e2e_s - leave_zero_s`; all of `e2e_s`
  when one existed at submit). It still holds any wait behind other requests on that instance,
  the S3 reads and writes of the endpoint, and the polling lateness.
- Tokens per second of the work itself = output tokens / `work_s` (the bench table shows it beside
  the cold start); `tokens_per_s` of the record stays output tokens / `e2e_s`, as for every path.

A request that finds the endpoint at zero may wait for a whole instance launch: its wait gets
`leave_zero_allowance_s` on top of the request timeout. Time to first token is not knowable.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
import uuid
from typing import Any

from runner.cloud.aws import boto_client
from runner.core.errors import ServiceError, TimedOut, aws_error_code
from runner.core.records import RequestRecord
from runner.measure.records import ChatRequest, Stopwatch
from runner.measure.sagemaker import parse_completion, whole_answer_body

# An instance of the vLLM DLC from zero: launch, image pull, weight load (the real-time endpoint's
# launch-to-ready in the survey was about 8 minutes).
LEAVE_ZERO_ALLOWANCE_S = 1200.0
# InvokeEndpointAsync's InvocationTimeoutSeconds (the container's time on the request): 1 to 3600;
# RequestTTLSeconds (the request's time in the queue): 60 to 21600 (SageMaker API reference).
MAX_INVOCATION_TIMEOUT_S = 3600
REQUEST_TTL_S = (60, 21600)


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


class AsyncInferenceFailed(ServiceError):
    """The endpoint wrote a failure object for the request (its text is the message)."""


def split_s3_uri(uri: str) -> tuple[str, str]:
    """'s3://bucket/some/key' -> ('bucket', 'some/key')."""
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise ServiceError(f"not an S3 object location: {uri!r}")
    bucket, key = uri[5:].split("/", 1)
    return bucket, key


class SageMakerAsyncClient:
    def __init__(
        self,
        endpoint_name: str,
        model_id: str,
        region: str,
        *,
        bucket: str,
        input_prefix: str,
        timeout_s: float = 60.0,
        poll_s: float = 0.1,
        max_poll_s: float = 2.0,
        leave_zero_allowance_s: float = LEAVE_ZERO_ALLOWANCE_S,
        runtime: Any | None = None,
        sagemaker: Any | None = None,
        s3: Any | None = None,
    ) -> None:
        self.runtime = runtime or boto_client("sagemaker-runtime", region, timeout_s)
        self.sagemaker = sagemaker or boto_client("sagemaker", region, timeout_s)
        self.s3 = s3 or boto_client("s3", region, timeout_s)
        self.endpoint_name = endpoint_name
        self.model_id = model_id
        self.bucket = bucket
        self.input_prefix = input_prefix
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.max_poll_s = max_poll_s
        self.leave_zero_allowance_s = leave_zero_allowance_s

    def instance_count(self) -> int | None:
        """The endpoint's CurrentInstanceCount (None where DescribeEndpoint reports none)."""
        variants = self.sagemaker.describe_endpoint(EndpointName=self.endpoint_name).get("ProductionVariants") or []
        counts = [v["CurrentInstanceCount"] for v in variants if "CurrentInstanceCount" in v]
        return sum(counts) if counts else None

    def chat(self, request: ChatRequest, record: RequestRecord) -> RequestRecord:
        inference_id = str(uuid.uuid4())
        key = f"{self.input_prefix}{inference_id}.json"
        body = json.dumps(whole_answer_body(request, self.model_id)).encode()
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
        try:
            return self._queue_and_wait(f"s3://{self.bucket}/{key}", inference_id, record)
        finally:
            with contextlib.suppress(Exception):
                self.s3.delete_object(Bucket=self.bucket, Key=key)

    def _queue_and_wait(self, input_location: str, inference_id: str, record: RequestRecord) -> RequestRecord:
        at_zero = self.instance_count() == 0
        record.cold_start = at_zero
        limit = self.timeout_s + (self.leave_zero_allowance_s if at_zero else 0.0)
        watch = Stopwatch()
        response = self.runtime.invoke_endpoint_async(
            EndpointName=self.endpoint_name,
            InputLocation=input_location,
            InferenceId=inference_id,
            ContentType="application/json",
            Accept="application/json",
            InvocationTimeoutSeconds=clamp(math.ceil(self.timeout_s), 1, MAX_INVOCATION_TIMEOUT_S),
            # Once the runner has stopped waiting, the request expires in the queue: it never runs later.
            RequestTTLSeconds=clamp(math.ceil(limit), *REQUEST_TTL_S),
        )
        output = split_s3_uri(response["OutputLocation"])
        failure = split_s3_uri(response["FailureLocation"]) if response.get("FailureLocation") else None
        up_at: float | None = None if at_zero else 0.0
        delay = self.poll_s
        waited = 0.0
        while True:
            if up_at is None and (self.instance_count() or 0) > 0:
                up_at = watch.now()
            if self._exists(*output):
                done_at = watch.now()
                # No DescribeEndpoint showed the instance before its result did (the count lags
                # the instance, or the work fit between two polls): it existed by now, at the latest.
                if up_at is None:
                    up_at = done_at
                break
            if failure is not None and self._exists(*failure):
                text = self.s3.get_object(Bucket=failure[0], Key=failure[1])["Body"].read()
                line = " ".join(text.decode("utf-8", errors="replace").split())[:200] or "(empty failure object)"
                raise AsyncInferenceFailed(f"async inference failed: {line}")
            if watch.now() + delay > limit:
                raise TimedOut(f"timed out: no result at s3://{output[0]}/{output[1]} within {limit:.0f} s")
            time.sleep(delay)
            waited = delay
            delay = min(delay * 1.5, self.max_poll_s)
        raw = self.s3.get_object(Bucket=output[0], Key=output[1])["Body"].read()
        record.e2e_s = done_at
        phases: dict[str, float] = {"poll_s": waited}
        if at_zero:
            phases |= {"leave_zero_s": up_at, "queued_s": up_at, "work_s": done_at - up_at}
        else:
            phases["work_s"] = done_at
        record.phases = phases
        return parse_completion(raw, record)

    def _exists(self, bucket: str, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.s3.head_object(Bucket=bucket, Key=key)
        except ClientError as error:
            if aws_error_code(error) in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def close(self) -> None:
        for client in (self.runtime, self.sagemaker, self.s3):
            client.close()
