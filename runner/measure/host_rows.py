"""The rows measured on a server's own host (`runner.bench --in-region`): the in-region kit's
result turned into the runner's evidence, beside the row measured through the SSM tunnel.

The kit (inference_constructs/bench_kit) writes records in RequestRecord's shape; here they are
rebuilt as RequestRecords (derived figures computed by the runner's own code) under
`<backend>@host`, the row's label says what the client shared the host with, and the kit's
readings (the accelerator's, the server's `/metrics`) are cut per load level by when each ran.
"""

from __future__ import annotations

import dataclasses

from runner.cloud.reach.in_region import Run, row_name
from runner.core.backend_entries import BackendEntry
from runner.core.backends import Backend
from runner.core.evidence import Evidence
from runner.core.readings import AcceleratorReadings, ServerMetrics
from runner.core.records import RequestRecord
from runner.core.typed_json import JsonObject
from runner.measure.bench_file import BenchFile, kept_metrics
from runner.measure.load import LoadLevel
from runner.measure.records import WARM_UP
from runner.measure.server_metrics import metric_names, parse, summarize

TUNNEL_NOTE = "through the SSM tunnel from this machine"
RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(RequestRecord))


def kit_warm_up() -> JsonObject:
    """The runner's own warm-up (records.py WARM_UP), as the kit sends it."""
    return {
        "prompt": WARM_UP.prompt,
        "max_tokens": WARM_UP.max_tokens,
        "temperature": WARM_UP.temperature,
        "usage_per_chunk": WARM_UP.usage_per_chunk,
    }


def kit_metrics(backend: Backend) -> JsonObject:
    """Where the kit reads the server's own metrics on the host (its loopback port), and which."""
    return {"url": f"http://127.0.0.1:{backend.output.port}/metrics", "names": metric_names()}


def mark_tunnel_rows(names: set[str], evidence: Evidence[BenchFile]) -> None:
    """The rows of the servers also measured on their hosts, named as measured through the tunnel."""
    file = evidence.file
    for record in file.records:
        if record.backend in names:
            record.path = "tunnel"
    file.backends = [
        dataclasses.replace(entry, path="tunnel", path_note=TUNNEL_NOTE) if entry.name in names else entry
        for entry in file.backends
    ]


def host_note(run: Run, *, accelerator: bool = True) -> str:
    """The second row's label: on the server's host, sharing its CPUs (how many, where the kit said)."""
    host: JsonObject = run.result.host if run.result else {}
    client: JsonObject = run.result.client if run.result else {}
    vcpus = host.get("vcpus")
    what = ", ".join(filter(None, [run.output.instance_type, f"{vcpus} vCPUs" if vcpus else None]))
    note = (
        f"on the server's own host{f' ({what})' if what else ''}: the client shares the server's CPUs; no network path"
    )
    if client.get("cpu_s") is not None and client.get("wall_s"):
        note += f"; the client used {client['cpu_s'] / client['wall_s']:.0%} of one vCPU"
    return note + (accelerator_note(run.result.accelerator if run.result else None) if accelerator else "")


def accelerator_note(accelerator: JsonObject | None) -> str:
    """What the host's own accelerator tool read while the kit measured (or why nothing)."""
    if not accelerator:
        return ""
    if accelerator.get("utilization_pct_mean") is None:
        return f"; accelerator not read: {accelerator.get('problem') or 'no reading'}"
    what = "NeuronCores" if accelerator.get("tool") == "neuron-monitor" else "GPU"
    return (
        f"; {what} busy {accelerator['utilization_pct_mean']:.0f} % mean, {accelerator['utilization_pct_max']:.0f} % "
        f"max, {accelerator['memory_used_mib_max'] / 1024:.1f} GiB used ({accelerator['tool']}, "
        f"{len(accelerator['samples'])} readings)"
    )


def accelerator_within(accelerator: JsonObject | None, span: list[float]) -> AcceleratorReadings | None:
    """The accelerator's readings while one level ran (`span`: its start and end on the kit's
    sampling clock), summarised as the kit summarises the whole run (a kit that read none: what
    it said)."""
    if not accelerator:
        return None
    if accelerator.get("tool") is None:
        return AcceleratorReadings.from_json(accelerator, "the kit's accelerator")
    samples = [s for s in accelerator.get("samples") or [] if span[0] <= s[0] <= span[1]]
    busy = [s[1] for s in samples]
    return AcceleratorReadings(
        tool=accelerator["tool"],  # type: ignore[arg-type]  # the kit names its tool
        problem=None if samples else "no reading while this level ran",
        samples=samples,
        utilization_pct_mean=round(sum(busy) / len(busy), 2) if busy else None,
        utilization_pct_max=max(busy) if busy else None,
        memory_used_mib_max=max(s[2] for s in samples) if samples else None,
    )


def server_metrics_of(kit_metrics_result: JsonObject | None) -> ServerMetrics | None:
    """The kit's `/metrics` samples of one level (text lines, as scraped) in the figures the
    tunnel row's sampler keeps: parsed with the runner's own parser, then summarised."""
    if not kit_metrics_result:
        return None
    samples = [(at, parse(text)) for at, text in kit_metrics_result.get("samples") or []]
    summary = summarize(samples, kit_metrics_result["url"], kit_metrics_result.get("problem"))  # type: ignore[arg-type]
    return kept_metrics(summary, samples)


def add_host_entry(run: Run, evidence: Evidence[BenchFile], *, accelerator: bool = True) -> str:
    """The row `<backend>@host` in the evidence's backends, right after the server's tunnel row."""
    row = row_name(run.backend.name)
    host = dataclasses.replace(
        run.backend,
        name=row,
        source=f"{run.backend.source}, in-region kit on {run.instance_id}",
        base_url=run.config.get("base_url"),  # type: ignore[arg-type]  # the kit's config names it
        health_url=None,
        local_port=None,
        forward_command=None,
        notes=[],
    )
    entry = dataclasses.replace(
        BackendEntry.of(host), path="in-region", path_note=host_note(run, accelerator=accelerator),
        instance_id=run.instance_id,
    )  # fmt: skip
    backends = evidence.file.backends
    at = next((i + 1 for i, b in enumerate(backends) if b.name == run.backend.name), len(backends))
    backends.insert(at, entry)
    return row


def add_host_row(run: Run, levels: list[LoadLevel], evidence: Evidence[BenchFile]) -> None:
    """The run's records under `<backend>@host`; a run without records gets one error record per
    timed request of each level."""
    row = add_host_entry(run, evidence)
    if run.result is None:
        for level in levels:
            for number in range(1, level.requests + 1):
                record = RequestRecord(backend=row, run=number, error=run.problem, level=level.recorded())
                record.path = "in-region"
                evidence.file.records.append(record)
        return
    evidence.file.warm_up.extend(kit_record(warm, row) for warm in run.result.warm_ups)
    evidence.file.records.extend(kit_record(record, row) for record in run.result.records)


def kit_request(data: JsonObject, row: str) -> RequestRecord:
    """One of the kit's records, under the row it is kept as (`<backend>@host`), typed."""
    values = {k: v for k, v in data.items() if k in RECORD_FIELDS} | {"backend": row}
    values.setdefault("run", 0)
    return RequestRecord.from_json(values, f"the kit's record {values['run']} of {row}")


def kit_record(data: JsonObject, row: str) -> RequestRecord:
    """One of the kit's records as the evidence keeps it, marked as measured in the region."""
    return dataclasses.replace(kit_request(data, row), path="in-region")
