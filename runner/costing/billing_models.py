"""How each of AWS's billing models is costed, one row per model, its behaviour named by reference
as a serving row names its own (catalog/serving.py): a level's price, a cold start's, a fixed
monthly line, and a month of a workload. Costing asks this table instead of branching on the
billing model; a new model is one row here and the functions it names."""

from __future__ import annotations

from dataclasses import dataclass

from catalog.backends import Billing

# Seconds without a request after which an option that scales to zero is at zero: serverless is
# not published by AWS (assumed 5 minutes); async is its scale-in alarm (Application Auto
# Scaling's scale-in alarm wants 15 one-minute datapoints below target); Custom Model Import scales
# a copy down after a 5-minute window without invocations.
ASYNC_IDLE_TAIL_S = 15 * 60
COSTING = "runner.costing.measured"
ADVICE = "runner.costing.advice"


@dataclass(frozen=True)
class BillingModel:
    # AWS bills it at all (a user's server and the embedded model are not billed).
    billed: bool = True
    # Billed by the hour while an instance runs: its month at 24x7 is a figure of its own.
    hourly: bool = False
    # Billed per token, with no capacity of its own: a server given with `--endpoint` under the
    # name of a catalog backend of it is not priced as it (a managed API has no URL to give), and
    # its price is the one an always-on instance breaks even against.
    per_token: bool = False
    # Priced from its transform jobs' evidence (runner.batch), not from load levels.
    priced_by_jobs: bool = False
    # Seconds without a request after which it is at zero instances (None: it never is).
    idle_before_zero_s: float | None = None
    # What a level priced by its requests always says, null when unknown.
    said_when_unknown: tuple[str, ...] = ()
    # A priced month judges the first token (a transform job has none) and names its load level
    # (per-token Bedrock has none).
    first_token: bool = True
    load_level: bool = True
    # References: a level's $/M and basis (row, figures, price, context); a cold start's row
    # (base, cold records, price); fixed monthly rows (base, backend, price, records); a month of
    # a workload (option, workload, price).
    level: str = ""
    cold: str = ""
    fixed: str = ""
    advise: str = ""


BILLING_MODELS: dict[Billing, BillingModel] = {
    Billing.INSTANCE_HOURS: BillingModel(
        hourly=True, level=f"{COSTING}:instance_hours_level", advise=f"{ADVICE}:advise_instance_hours"
    ),
    Billing.INSTANCE_HOURS_WHILE_RUNNING: BillingModel(
        hourly=True,
        idle_before_zero_s=float(ASYNC_IDLE_TAIL_S),
        level=f"{COSTING}:while_running_level",
        cold=f"{COSTING}:leaving_zero_rows",
        advise=f"{ADVICE}:advise_async",
    ),
    Billing.SERVERLESS_SECONDS: BillingModel(
        idle_before_zero_s=300.0,
        said_when_unknown=("usd_per_million_output",),
        level=f"{COSTING}:serverless_level",
        cold=f"{COSTING}:serverless_cold_rows",
        advise=f"{ADVICE}:advise_serverless",
    ),
    Billing.MODEL_UNIT_MINUTES: BillingModel(
        idle_before_zero_s=300.0,
        said_when_unknown=("usd_per_million_output", "sustained_usd_per_million_output"),
        level=f"{COSTING}:model_unit_level",
        cold=f"{COSTING}:model_unit_cold_rows",
        fixed=f"{COSTING}:model_unit_storage_rows",
        advise=f"{ADVICE}:advise_model_import",
    ),
    Billing.JOB_INSTANCE_HOURS: BillingModel(
        priced_by_jobs=True,
        said_when_unknown=("usd_per_million_output",),
        first_token=False,
        advise=f"{ADVICE}:advise_batch",
    ),
    Billing.PER_TOKEN: BillingModel(
        per_token=True, load_level=False, level=f"{COSTING}:per_token_level", advise=f"{ADVICE}:advise_per_token"
    ),
    Billing.NONE: BillingModel(billed=False),
}


def billing_model(billing: Billing) -> BillingModel:
    return BILLING_MODELS[billing]
