"""What is billing right now, and at what hourly list price: the rows of the table every `runner.up`
ends with (`runner.render.up` shows them).

A server bills while its instance runs (pending, running, or shutting down) and a SageMaker
endpoint while it exists in any state but Failed; a group held at zero and a waiting image bill
nothing by the hour (ECR storage and a running CodeBuild build are shown as what they are, not
priced here). Prices come from the dated offline table (catalog/prices.py), the us-east-1 figure
marked as such for another region; `runner.cost` asks the Pricing API.
"""

from __future__ import annotations

from dataclasses import dataclass

from catalog.prices import EC2, GP3_BASELINE_MBS, SAGEMAKER, offline_price
from runner.core.typed_json import JsonObject
from runner.costing.arithmetic import with_raised_throughput


@dataclass
class BillingNow:
    """One thing billing now, at its hourly list price (None: not in the offline table)."""

    backend: str
    region: str
    what: str
    usd_per_hour: float | None
    note: str = ""

    def to_json(self) -> JsonObject:
        return {
            "backend": self.backend,
            "region": self.region,
            "what": self.what,
            "usd_per_hour": self.usd_per_hour,
            "note": self.note,
        }


def hourly(service: str, item: str, region: str) -> tuple[float | None, str]:
    price = offline_price(service, item, region)
    if price is None:
        return None, "no price in the offline table"
    return price.usd_per_hour, price.note or f"list price, {price.as_of[:10]}"


def instance_billing(
    backend: str, region: str, instance_type: str, instance_id: str, throughput_mbs: int = GP3_BASELINE_MBS
) -> BillingNow:
    """The instance, and its root volume's gp3 throughput where the app raised it (its storage is
    not priced here, as the survey did not price it)."""
    price, note = hourly(EC2, instance_type, region)
    raised = None if price is None else with_raised_throughput(price, throughput_mbs)
    if raised is not None:
        price, extra = raised
        note = f"{note}; {extra}"
    return BillingNow(backend, region, f"{instance_type} instance {instance_id}", price, note)


def endpoint_billing(backend: str, region: str, instance_type: str, endpoint: str, status: str) -> BillingNow:
    price, note = hourly(SAGEMAKER, instance_type, region)
    return BillingNow(backend, region, f"endpoint {endpoint} ({instance_type}, {status})", price, note)
