"""SageMaker serving gaps of moto 5.2: it stores serverless and asynchronous endpoint configs
(`ServerlessConfig`, `AsyncInferenceConfig`) and transform jobs, but serves none of them. Here
the answers come from a REAL OpenAI-compatible server on loopback (the embedded llama.cpp, or the
scripted tests/runner/fake_openai.py where a fault is wanted), with the real APIs' shapes:

- InvokeEndpoint: moto answers the static text "body" for any endpoint. For an endpoint named in
  `emulator.model_servers[name] = base_url`, the request body goes to
  `<base_url>/v1/chat/completions` and its JSON comes back (Content-Type application/json,
  `x-Amzn-Invoked-Production-Variant`); a server error becomes SageMaker's `ModelError` (HTTP 424,
  with the container's status and text). A serverless or asynchronous endpoint with no server
  named answers `ModelError` saying so, never moto's static text.
- Serverless MaxConcurrency: moto has none. A request beyond the config's `MaxConcurrency` while
  the others are in flight is refused with `ThrottlingException` (HTTP 400); the wording of the
  message is the emulator's.
- Serverless cold start: moto has none. `emulator.cold_start_s[name] = s` delays the first
  invocation after idle by `s` (the container starting); `go_idle(emulator, name)` makes the next
  one cold again.
- InvokeEndpointAsync: moto writes a static object into a bucket of its own and returns
  `response.json`. Here the answer is HTTP 202 with the InferenceId, and the OutputLocation
  `<S3OutputPath>/<InferenceId>.out` and FailureLocation `<S3FailurePath>/<InferenceId>-error.out`
  of the endpoint config, as AWS names them; in the background the input object is read from
  moto's S3, sent to the server, and the completion written to the output location (or the
  server's error text to the failure location).
- Scale to zero: moto's endpoints always report their initial instance count.
  `hold_at_zero(emulator, name, leave_zero_s)` sets DescribeEndpoint's CurrentInstanceCount to 0
  (autoscaling's MinCapacity 0 after idle); the next request queued there waits `leave_zero_s`
  (the scale-out from zero) before the count becomes 1 and the request is served. With
  `count_reported=False` the instance serves while the count stays 0 (DescribeEndpoint's
  CurrentInstanceCount follows the scaling activity, which can end after the instance has taken
  its first request and answered it).
- Transform jobs: moto marks every job Completed at creation, with no output. Here a job is
  InProgress (no TransformStartTime yet), then, after `emulator.transform_delay_s`, runs each
  line of each input object under the S3Prefix through `emulator.transform_server` in order
  (SplitType Line, BatchStrategy SingleRecord) and writes `<S3OutputPath>/<name relative to the
  prefix>.out`, one response per line (AssembleWith Line), then Completed with TransformStartTime
  and TransformEndTime; Failed with a FailureReason when `emulator.transform_failure` says one, or
  when the server fails a record (the reason names its status; the wording is the emulator's).
- StopTransformJob: moto does not implement it (HTTP 500). Here an InProgress job goes Stopping,
  then Stopped once its current record is done; every call is kept in
  `emulator.stopped_transform_jobs`. Stopping a job that is not InProgress is a ValidationException.

- Endpoints of inference components (tests/aws_emulator/inference_components.py keeps the
  components): a request to an endpoint that hosts components must name one (its
  `X-Amzn-SageMaker-Inference-Component` header), else ValidationError "Inference Component Name
  header is required for endpoints to which you plan to deploy inference components. Please include
  Inference Component Name header or consider using SageMaker models." (the runtime's own words,
  quoted in aws-samples/amazon-kendra-langchain-extensions#64). It goes to
  `emulator.model_servers[component]` (else the endpoint's). At zero copies it is refused with
  ValidationError (HTTP 400) "Inference Component has no capacity to process this request.
  ApplicationAutoScaling may be in-progress (if configured) or try to increase the capacity by
  invoking UpdateInferenceComponentRuntimeConfig API." (the runtime's words in AWS's announcement of
  scaling to zero), and the refusal, counted in `emulator.no_capacity_refusals` (what SageMaker
  counts in NoCapacityInvocationFailures), starts one copy after the component's leave-zero time
  (`hold_copies_at_zero`), as the alarm and its step policy do: only where they would, an alarm on
  NoCapacityInvocationFailures for the component with its actions on and an action to run, and a
  scalable target of its copies whose scale-out is not suspended (the SageMaker guide, "Scale an
  endpoint to zero instances": target tracking has no datapoint at zero copies, so nothing else
  starts one; Application Auto Scaling, "Suspend and resume scaling": a suspended target's step
  policies do not act). Without them the component stays at zero and every request is refused.
- InvokeEndpointWithResponseStream: moto has no route for it. Here, for an endpoint with a model
  server, the body goes to the server as it is (stream true) and each piece of its SSE answer is
  sent on as it arrives, one PayloadPart event each, in AWS's binary event-stream framing
  (tests/runner/fake_aws_stream.py), so botocore's own parser reads it; a server error before the
  stream is a ModelError (HTTP 424).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.aws_emulator.inference_components import COPY_DIMENSION, components
from tests.runner.fake_aws_stream import payload_part

# InvokeEndpointWithResponseStream's path (botocore's sagemaker-runtime model), which moto lacks.
STREAM_PATH = "{0}/endpoints/(?P<name>[^/]+)/invocations-response-stream$"
COMPONENT_HEADER = "X-Amzn-SageMaker-Inference-Component"
HEADER_REQUIRED = (
    "Inference Component Name header is required for endpoints to which you plan to deploy inference components. "
    "Please include Inference Component Name header or consider using SageMaker models."
)
NO_CAPACITY = (
    "Inference Component has no capacity to process this request. ApplicationAutoScaling may be in-progress "
    "(if configured) or try to increase the capacity by invoking UpdateInferenceComponentRuntimeConfig API."
)


def install(emulator: Any) -> Callable[[], None]:
    import httpx
    from moto.core.utils import utcnow
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication
    from moto.s3.models import s3_backends
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.models import SageMakerModelBackend, sagemaker_backends
    from moto.sagemaker.responses import SageMakerResponse
    from moto.sagemakerruntime import urls as runtime_urls
    from moto.sagemakerruntime.responses import SageMakerRuntimeResponse

    from runner.core.tls import tls_context

    emulator.model_servers = {}
    emulator.cold_start_s = {}
    emulator.transform_server = None
    emulator.transform_failure = None
    emulator.transform_delay_s = 0.2
    emulator.stopped_transform_jobs = []
    emulator.throttled = []
    emulator.no_capacity_refusals = []
    state = RuntimeState()
    emulator.runtime_state = state

    def lookup(response) -> tuple[Any, Any]:
        backend = sagemaker_backends[response.current_account][response.region]
        name = response.path.split("/")[2]
        endpoint = backend.endpoints.get(name)
        config = backend.endpoint_configs.get(endpoint.endpoint_config_name) if endpoint else None
        return endpoint, config

    def completions(base: str, body: bytes) -> httpx.Response:
        root = base.rstrip("/").removesuffix("/v1")
        return httpx.post(
            f"{root}/v1/chat/completions",
            content=body,
            headers={"Content-Type": "application/json"},
            timeout=300,
            verify=tls_context(),
        )

    def model_error(status: int, text: str) -> tuple[int, dict[str, str], str]:
        message = f'Received server error ({status}) from primary with message "{" ".join(text.split())[:300]}".'
        return error_reply(424, "ModelError", message, {"OriginalStatusCode": status, "OriginalMessage": text[:300]})

    def component_of(response, endpoint) -> tuple[Any, Any]:
        """(the component a request to `endpoint` names, or an error reply); (None, None) for an
        endpoint that hosts none."""
        backend = sagemaker_backends[response.current_account][response.region]
        hosted = {c.name: c for c in components(backend).values() if c.endpoint_name == endpoint.endpoint_name}
        if not hosted:
            return None, None
        name = response.headers.get(COMPONENT_HEADER)
        if not name:
            return None, error_reply(400, "ValidationError", HEADER_REQUIRED)
        component = hosted.get(name)
        if component is None:
            return None, error_reply(
                400,
                "ValidationError",
                f"Inference Component {name} is not hosted on endpoint {endpoint.endpoint_name}.",
            )
        if component.current_copies == 0:
            emulator.no_capacity_refusals.append(name)
            if starts_from_zero(response.current_account, response.region, name):
                state.leave_zero(name, lambda: emulator.inference_components.set_copies(backend, name, 1))
            return None, error_reply(400, "ValidationError", NO_CAPACITY)
        return component, None

    original_invoke = SageMakerRuntimeResponse.invoke_endpoint
    original_invoke_async = SageMakerRuntimeResponse.invoke_endpoint_async

    def invoke_endpoint(response):
        endpoint, config = lookup(response)
        if endpoint is None or config is None:
            return original_invoke(response)
        name = endpoint.endpoint_name
        variant = config.production_variants[0] if config.production_variants else {}
        serverless = variant.get("ServerlessConfig")
        component, refused = component_of(response, endpoint)
        if refused:
            return refused
        base = emulator.model_servers.get(component.name if component else name) or emulator.model_servers.get(name)
        if base is None:
            if serverless or config.async_inference_config or component:
                return model_error(500, f"no model server for endpoint {name}: set emulator.model_servers[{name!r}]")
            return original_invoke(response)
        limit = (serverless or {}).get("MaxConcurrency")
        if not state.enter(name, limit):
            emulator.throttled.append(name)
            return error_reply(
                400,
                "ThrottlingException",
                f"Endpoint {name} is at its MaxConcurrency of {limit} concurrent invocations.",
            )
        try:
            cold = emulator.cold_start_s.get(name)
            if cold and name not in state.warm:
                time.sleep(cold)
            state.warm.add(name)
            try:
                answer = completions(
                    base, response.body if isinstance(response.body, bytes) else response.body.encode()
                )
            except httpx.HTTPError as error:
                return model_error(502, f"{type(error).__name__}: {error}")
            if answer.status_code != 200:
                return model_error(answer.status_code, answer.text)
            headers = {"Content-Type": "application/json", "x-Amzn-Invoked-Production-Variant": variant["VariantName"]}
            return 200, headers, answer.text
        finally:
            state.leave(name)

    def invoke_endpoint_async(response):
        endpoint, config = lookup(response)
        if endpoint is None or config is None or not config.async_inference_config:
            return original_invoke_async(response)
        name = endpoint.endpoint_name
        base = emulator.model_servers.get(name)
        if base is None:
            return model_error(500, f"no model server for endpoint {name}: set emulator.model_servers[{name!r}]")
        output_config = config.async_inference_config.get("OutputConfig") or {}
        output_path = output_config["S3OutputPath"].rstrip("/")
        failure_path = (output_config.get("S3FailurePath") or output_config["S3OutputPath"]).rstrip("/")
        inference_id = response.headers.get("X-Amzn-SageMaker-Inference-Id") or str(uuid.uuid4())
        input_location = response.headers.get("X-Amzn-SageMaker-InputLocation") or ""
        output_location = f"{output_path}/{inference_id}.out"
        failure_location = f"{failure_path}/{inference_id}-error.out"
        s3 = s3_backends[response.current_account]["aws"]

        def serve() -> None:
            state.wait_for_instance(name, lambda count: set_instance_count(endpoint, count))
            try:
                bucket, key = split(input_location)
                body = s3.get_object(bucket, key).value
                answer = completions(base, body)
                ok, text = answer.status_code == 200, answer.text
                if not ok:
                    text = f'Received server error ({answer.status_code}) from model with message "{text[:300]}".'
            except Exception as error:
                ok, text = False, f"{type(error).__name__}: {error}"
            bucket, key = split(output_location if ok else failure_location)
            s3.put_object(bucket, key, text.encode())

        threading.Thread(target=serve, name=f"async-{inference_id}", daemon=True).start()
        headers = {
            "status": "202",
            "Content-Type": "application/json",
            "X-Amzn-SageMaker-OutputLocation": output_location,
            "X-Amzn-SageMaker-FailureLocation": failure_location,
        }
        return 202, headers, json.dumps({"InferenceId": inference_id})

    def invoke_endpoint_with_response_stream(response):
        endpoint, config = lookup(response)
        if endpoint is None or config is None:
            name = response.path.split("/")[2]
            return error_reply(
                400, "ValidationError", f"Endpoint {name} of account {response.current_account} not found."
            )
        component, refused = component_of(response, endpoint)
        if refused:
            return refused
        name = endpoint.endpoint_name
        base = emulator.model_servers.get(component.name if component else name) or emulator.model_servers.get(name)
        if base is None:
            return model_error(500, f"no model server for endpoint {name}: set emulator.model_servers[{name!r}]")
        root = base.rstrip("/").removesuffix("/v1")
        client = httpx.Client(timeout=300, verify=tls_context())
        body = response.body if isinstance(response.body, bytes) else response.body.encode()
        upstream = client.send(
            client.build_request(
                "POST", f"{root}/v1/chat/completions", content=body, headers={"Content-Type": "application/json"}
            ),
            stream=True,
        )
        if upstream.status_code != 200:
            text = upstream.read().decode("utf-8", errors="replace")
            upstream.close()
            client.close()
            return model_error(upstream.status_code, text)

        def parts():
            try:
                for piece in upstream.iter_raw():
                    if piece:
                        yield payload_part(piece)
            finally:
                upstream.close()
                client.close()

        variant = config.production_variants[0]["VariantName"] if config.production_variants else "AllTraffic"
        headers = {
            "Content-Type": "application/vnd.amazon.eventstream",
            "X-Amzn-Invoked-Production-Variant": variant,
        }
        return 200, headers, parts()

    SageMakerRuntimeResponse.invoke_endpoint = invoke_endpoint
    SageMakerRuntimeResponse.invoke_endpoint_async = invoke_endpoint_async
    SageMakerRuntimeResponse.invoke_endpoint_with_response_stream = invoke_endpoint_with_response_stream
    runtime_urls.url_paths[STREAM_PATH] = runtime_urls.response.dispatch

    # moto's server sends a SageMaker-signed request to the runtime only when its path ends in
    # "invocations"; the stream's path ends in "invocations-response-stream".
    original_infer = DomainDispatcherApplication.infer_service_region_host

    def infer_service_region_host(dispatcher, environ, path):
        host = original_infer(dispatcher, environ, path)
        if environ.get("PATH_INFO", "").endswith("/invocations-response-stream") and host:
            host = host.replace("api.sagemaker.", "runtime.sagemaker.", 1)
        return host

    DomainDispatcherApplication.infer_service_region_host = infer_service_region_host

    original_create_transform_job = SageMakerModelBackend.create_transform_job

    def create_transform_job(backend, **kwargs):
        job = original_create_transform_job(backend, **kwargs)
        job.transform_job_status = "InProgress"
        job.transform_start_time = job.transform_end_time = None
        threading.Thread(
            target=run_transform, args=(emulator, job, s3_backends[backend.account_id]["aws"], completions, utcnow),
            name=f"transform-{job.transform_job_name}", daemon=True,
        ).start()  # fmt: skip
        return job

    SageMakerModelBackend.create_transform_job = create_transform_job

    def stop_transform_job(response):
        from moto.core.responses import EmptyResult

        name = response._get_param("TransformJobName")
        job = sagemaker_backends[response.current_account][response.region].transform_jobs.get(name)
        emulator.stopped_transform_jobs.append(name)
        if job is None:
            raise ValidationError(message=f"Could not find transform job '{name}'.")
        if job.transform_job_status != "InProgress":
            raise ValidationError(message=f"Transform job {name} is {job.transform_job_status}: it cannot be stopped.")
        job.transform_job_status = "Stopping"
        job.last_modified_time = utcnow()
        return EmptyResult()

    SageMakerResponse.stop_transform_job = stop_transform_job

    original_reset = emulator.reset

    def reset() -> None:
        original_reset()
        emulator.model_servers.clear()
        emulator.cold_start_s.clear()
        emulator.transform_server = None
        emulator.transform_failure = None
        emulator.transform_delay_s = 0.2
        emulator.stopped_transform_jobs.clear()
        emulator.throttled.clear()
        emulator.no_capacity_refusals.clear()
        state.clear()

    emulator.reset = reset

    def undo() -> None:
        SageMakerRuntimeResponse.invoke_endpoint = original_invoke
        SageMakerRuntimeResponse.invoke_endpoint_async = original_invoke_async
        del SageMakerRuntimeResponse.invoke_endpoint_with_response_stream
        runtime_urls.url_paths.pop(STREAM_PATH, None)
        DomainDispatcherApplication.infer_service_region_host = original_infer
        SageMakerModelBackend.create_transform_job = original_create_transform_job
        del SageMakerResponse.stop_transform_job
        del emulator.reset  # the class's own again

    return undo


class RuntimeState:
    """What SageMaker keeps per endpoint and moto does not: requests in flight, warm containers,
    instances held at zero and the scale-out under way."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight: dict[str, int] = {}
        self.warm: set[str] = set()
        self.at_zero: dict[str, float] = {}
        self.count_unreported: set[str] = set()
        self.scaling: dict[str, threading.Event] = {}
        # Inference components: seconds from the first refusal at zero copies to a copy, and those
        # whose scale-out from zero is under way.
        self.component_leave_zero_s: dict[str, float] = {}
        self.leaving_zero: set[str] = set()
        # Each hold at zero of a component starts a new spell: a scale-out of an earlier one is void.
        self.spell: dict[str, int] = {}

    def clear(self) -> None:
        with self.lock:
            self.in_flight.clear()
            self.warm.clear()
            self.at_zero.clear()
            self.count_unreported.clear()
            self.scaling.clear()
            self.component_leave_zero_s.clear()
            self.leaving_zero.clear()
            self.spell.clear()

    def leave_zero(self, component: str, start_copy: Callable[[], Any]) -> None:
        """A request found no copy: the alarm's step policy starts one after the leave-zero time
        (once, however many requests are refused meanwhile)."""
        with self.lock:
            if component in self.leaving_zero:
                return
            self.leaving_zero.add(component)
            delay = self.component_leave_zero_s.get(component, 0.0)
            spell = self.spell.get(component, 0)

        def scale_out() -> None:
            time.sleep(delay)
            with self.lock:
                if self.spell.get(component, 0) != spell:
                    return
                self.leaving_zero.discard(component)
            with contextlib.suppress(Exception):  # the component was deleted meanwhile
                start_copy()

        threading.Thread(target=scale_out, name=f"leave-zero-{component}", daemon=True).start()

    def enter(self, name: str, limit: int | None) -> bool:
        with self.lock:
            if limit is not None and self.in_flight.get(name, 0) >= limit:
                return False
            self.in_flight[name] = self.in_flight.get(name, 0) + 1
            return True

    def leave(self, name: str) -> None:
        with self.lock:
            self.in_flight[name] -= 1

    def wait_for_instance(self, name: str, set_count: Callable[[int], None]) -> None:
        """At zero: the first request starts the scale-out; every request waits for it."""
        with self.lock:
            if name not in self.at_zero and name not in self.scaling:
                return
            event = self.scaling.get(name)
            if event is None:
                delay = self.at_zero.pop(name)
                reported = name not in self.count_unreported
                self.count_unreported.discard(name)
                event = self.scaling[name] = threading.Event()

                def scale_out() -> None:
                    time.sleep(delay)
                    if reported:
                        set_count(1)
                    with self.lock:
                        self.scaling.pop(name, None)
                    event.set()

                threading.Thread(target=scale_out, name=f"scale-out-{name}", daemon=True).start()
        event.wait()


def set_instance_count(endpoint: Any, count: int) -> None:
    for variant in endpoint.production_variants:
        variant["CurrentInstanceCount"] = variant["DesiredInstanceCount"] = count


def hold_at_zero(emulator: Any, name: str, leave_zero_s: float, count_reported: bool = True) -> None:
    """Autoscaling has taken async endpoint `name` (in any account and region) to zero: DescribeEndpoint
    says CurrentInstanceCount 0 until a request comes and `leave_zero_s` has passed (and, without
    `count_reported`, after that too, while the instance serves)."""
    from moto.sagemaker.models import sagemaker_backends

    for account in list(sagemaker_backends):
        for region in list(sagemaker_backends[account]):
            endpoint = sagemaker_backends[account][region].endpoints.get(name)
            if endpoint is not None:
                set_instance_count(endpoint, 0)
    with emulator.runtime_state.lock:
        emulator.runtime_state.at_zero[name] = leave_zero_s
        if not count_reported:
            emulator.runtime_state.count_unreported.add(name)


def starts_from_zero(account: str, region: str, component: str) -> bool:
    """Whether a refusal at zero copies starts one: an armed alarm on the component's
    NoCapacityInvocationFailures with an action, and its copies' scalable target not suspended
    for scale-out (moto stores both and runs neither)."""
    from moto.applicationautoscaling.models import applicationautoscaling_backends
    from moto.cloudwatch.models import cloudwatch_backends

    alarms = cloudwatch_backends[account][region].alarms.values()
    armed = any(
        alarm.metric_name == "NoCapacityInvocationFailures"
        and any(d.name == "InferenceComponentName" and d.value == component for d in alarm.dimensions)
        and alarm.actions_enabled in (True, "true", "True")
        and alarm.alarm_actions
        for alarm in alarms
    )
    targets = applicationautoscaling_backends[account][region].targets.get(COPY_DIMENSION) or {}
    target = targets.get(f"inference-component/{component}")
    suspended = dict(target.suspended_state or {}) if target is not None else {}
    return armed and target is not None and not suspended.get("DynamicScalingOutSuspended")


def hold_copies_at_zero(emulator: Any, component: str, leave_zero_s: float) -> None:
    """Autoscaling has taken inference component `component` (in any account and region) to zero
    copies (its endpoint to zero instances): the next request is refused for no capacity, and a copy
    answers `leave_zero_s` after that first refusal."""
    from moto.sagemaker.models import sagemaker_backends

    for account in list(sagemaker_backends):
        for region in list(sagemaker_backends[account]):
            backend = sagemaker_backends[account][region]
            if component in components(backend):
                emulator.inference_components.set_copies(backend, component, 0)
    state = emulator.runtime_state
    with state.lock:
        state.component_leave_zero_s[component] = leave_zero_s
        state.spell[component] = state.spell.get(component, 0) + 1
        state.leaving_zero.discard(component)


def go_idle(emulator: Any, name: str) -> None:
    """The serverless endpoint's containers have gone: its next invocation is a cold start."""
    emulator.runtime_state.warm.discard(name)


def split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def error_reply(status: int, code: str, message: str, extra: dict[str, Any] | None = None):
    """A rest-json error as SageMaker's runtime sends one (botocore reads the code from the header;
    moto takes a reply's status from its `status` header)."""
    headers = {"Content-Type": "application/json", "x-amzn-ErrorType": code, "status": str(status)}
    return status, headers, json.dumps({"message": message, **(extra or {})})


def run_transform(emulator: Any, job: Any, s3: Any, completions: Callable[[str, bytes], Any], now: Callable) -> None:
    """One transform job, as SageMaker runs it with SplitType Line, SingleRecord, AssembleWith Line."""

    def finish(status: str, reason: str = "") -> None:
        job.transform_job_status = status
        job.failure_reason = reason
        job.transform_end_time = job.last_modified_time = now()

    started = time.monotonic()
    while time.monotonic() - started < emulator.transform_delay_s and job.transform_job_status != "Stopping":
        time.sleep(0.01)
    if job.transform_job_status == "Stopping":
        finish("Stopped")
        return
    job.transform_start_time = job.last_modified_time = now()
    if emulator.transform_failure:
        finish("Failed", emulator.transform_failure)
        return
    source = job.transform_input["DataSource"]["S3DataSource"]["S3Uri"]
    bucket, prefix = split(source)
    out_bucket, out_prefix = split(job.transform_output["S3OutputPath"])
    if out_prefix and not out_prefix.endswith("/"):
        out_prefix += "/"
    try:
        keys = sorted(k for k in s3.get_bucket(bucket).keys if k.startswith(prefix))
    except Exception as error:
        finish("Failed", f"ClientError: cannot read the input at {source}: {error}")
        return
    if not keys:
        finish("Failed", f"ClientError: no input objects under {source}")
        return
    for key in keys:
        lines = [line for line in s3.get_object(bucket, key).value.decode().splitlines() if line.strip()]
        answers = []
        for number, line in enumerate(lines, 1):
            if job.transform_job_status == "Stopping":
                finish("Stopped")
                return
            if not emulator.transform_server:
                finish("Failed", "ClientError: no model server (set emulator.transform_server)")
                return
            try:
                answer = completions(emulator.transform_server, line.encode())
            except Exception as error:
                finish("Failed", f"ClientError: the model container did not answer record {number}: {error}")
                return
            if answer.status_code != 200:
                text = " ".join(answer.text.split())[:200]
                finish("Failed", f"ClientError: the model container answered HTTP {answer.status_code} for record {number} of {key}: {text}")  # fmt: skip
                return
            answers.append(" ".join(answer.text.splitlines()))
        relative = key[len(prefix) :].lstrip("/") or key.rsplit("/", 1)[-1]
        s3.put_object(out_bucket, f"{out_prefix}{relative}.out", ("\n".join(answers) + "\n").encode())
    finish("Completed")
