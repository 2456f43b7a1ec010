"""Prices a fleet is bought at, beside on-demand: EC2 Spot, Savings Plans, Bedrock's batch and
service tiers and Provisioned Throughput. Each figure carries its SKU or offering id, the API that
gave it and its date; a figure that cannot be sourced is absent, with why.

- **EC2 Spot**, for an EC2 backend's instance type and region: `DescribeSpotPriceHistory` over
  the last SPOT_WINDOW (Linux/UNIX), reported as the price in effect in each zone (the latest
  change per zone) and the median of those across zones; `GetSpotPlacementScores` for the count
  asked (1 to 10, 10 most likely to be fulfilled). The interruption risk is not measured: no AWS
  API gives it (the Spot Instance Advisor's frequency bands are a web page, not recorded here).
  SageMaker endpoints and transform jobs have no Spot (SageMaker's managed Spot is for training).
- **Savings Plans**, `DescribeSavingsPlansOfferingRates` (the savingsplans API, us-east-1): a
  Compute Savings Plan for an EC2 instance (Linux/UNIX, shared tenancy: usage type
  `BoxUsage:<type>`, operation `RunInstances`), a SageMaker Savings Plan for a SageMaker instance
  (usage type `Host:<type>` real-time, `AsyncInf:<type>` asynchronous, `Tsform:<type>` batch
  transform), 1-year and 3-year, No Upfront, by the hour.
- **Bedrock**, from the Pricing API's `AmazonBedrock` products of the model in the region: batch
  inference, the flex and priority service tiers (per token) and Provisioned Throughput (per model
  unit-hour, by commitment: one month, six months). The reserved tier is priced through an
  account team and is not in the price list: absent.

With no account (or no network, as in tests), each answer is read from the recorded snapshots
under catalog/price_snapshots/ (one file per source API, each entry the request that produced
it, its date and the API's answer as it came), through the same reading as a live answer; an
entry recorded without an answer says why, and a request with no entry is absent, never guessed.
`runner.cost --record-price-snapshots` with an account writes live answers there.

API names, parameters and fields are botocore's service models (data/ec2/2016-11-15,
data/savingsplans/2019-06-28, data/pricing/2017-10-15, data/bedrock/2023-04-20 `CommitmentDuration`,
data/bedrock-runtime/2023-09-30 `ServiceTierType`); where each reading comes from is said at it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from catalog.prices import (
    BEDROCK,
    EC2,
    MODEL_IMPORT_ITEM,
    PRICE_SNAPSHOTS,
    PRICING_API_REGION,
    SAGEMAKER,
    Price,
)
from runner.core.errors import RunnerError, describe
from runner.core.evidence import now_iso
from runner.costing.arithmetic import with_raised_throughput
from runner.costing.prices import PriceRequest, on_demand_dimensions, per_million

ON_DEMAND = "on-demand"
SPOT = "spot"
SAVINGS_PLAN_1YR = "savings-plan-1yr"
SAVINGS_PLAN_3YR = "savings-plan-3yr"
BEDROCK_BATCH = "bedrock-batch"
BEDROCK_FLEX = "bedrock-flex"
BEDROCK_PRIORITY = "bedrock-priority"
BEDROCK_RESERVED = "bedrock-reserved"
PROVISIONED_1_MONTH = "bedrock-provisioned-1-month"
PROVISIONED_6_MONTH = "bedrock-provisioned-6-month"
# What `runner.advise --purchase` takes (the reserved tier has no list price to take).
PURCHASE_OPTIONS = (
    ON_DEMAND,
    SPOT,
    SAVINGS_PLAN_1YR,
    SAVINGS_PLAN_3YR,
    BEDROCK_BATCH,
    BEDROCK_FLEX,
    BEDROCK_PRIORITY,
    PROVISIONED_1_MONTH,
    PROVISIONED_6_MONTH,
)
HOURLY_OPTIONS = (SPOT, SAVINGS_PLAN_1YR, SAVINGS_PLAN_3YR)
TOKEN_OPTIONS = (BEDROCK_BATCH, BEDROCK_FLEX, BEDROCK_PRIORITY)
PROVISIONED_OPTIONS = (PROVISIONED_1_MONTH, PROVISIONED_6_MONTH)

SPOT_HISTORY_API = "ec2:DescribeSpotPriceHistory"
PLACEMENT_API = "ec2:GetSpotPlacementScores"
SAVINGS_PLANS_API = "savingsplans:DescribeSavingsPlansOfferingRates"
PRICE_LIST_API = "pricing:GetProducts"
# How far back the Spot price history is read; the answer also holds each zone's last change
# before the start (EC2 API reference, DescribeSpotPriceHistory), so every zone has its current price.
SPOT_WINDOW = timedelta(days=7)
# The Spot product descriptions a Linux instance is priced under (botocore's RIProductDescription
# values; accounts without EC2-Classic see "Linux/UNIX", older histories "... (Amazon VPC)").
SPOT_PRODUCTS = ["Linux/UNIX", "Linux/UNIX (Amazon VPC)"]
INTERRUPTION_NOT_MEASURED = (
    "interruption risk not measured: no AWS API gives it (the Spot Instance Advisor's frequency bands are a "
    "web page, not recorded here)"
)
NO_SAGEMAKER_SPOT = "no Spot for SageMaker endpoints or transform jobs (SageMaker's managed Spot is for training jobs)"
RESERVED_ABSENT = (
    "the reserved tier is priced per 1,000 tokens a minute through an AWS account team (Bedrock user guide, "
    "service tiers), not in the price list"
)
# savingsplans ParentSavingsPlanOffering.durationSeconds of a 1-year and a 3-year plan.
YEAR_S = 365 * 24 * 3600
SAVINGS_PLAN_TERMS = {SAVINGS_PLAN_1YR: YEAR_S, SAVINGS_PLAN_3YR: 3 * YEAR_S}
PAYMENT_OPTION = "No Upfront"
# Answer fields that are transport, not the answer (kept out of a snapshot).
TRANSPORT = ("ResponseMetadata",)
# Request fields that change with every call (kept out of a snapshot's key).
VOLATILE = ("StartTime", "EndTime")
# Each API: the boto3 service its client is for, and the region it is asked in (None: the backend's).
APIS: dict[str, tuple[str, str | None]] = {
    "describe_spot_price_history": ("ec2", None),
    "get_spot_placement_scores": ("ec2", None),
    "describe_savings_plans_offering_rates": ("savingsplans", PRICING_API_REGION),
    "get_products": ("pricing", PRICING_API_REGION),
}
API_NAMES = {
    "describe_spot_price_history": SPOT_HISTORY_API,
    "get_spot_placement_scores": PLACEMENT_API,
    "describe_savings_plans_offering_rates": SAVINGS_PLANS_API,
    "get_products": PRICE_LIST_API,
}
SNAPSHOT_FILES = {
    "describe_spot_price_history": "ec2-describe-spot-price-history.json",
    "get_spot_placement_scores": "ec2-get-spot-placement-scores.json",
    "describe_savings_plans_offering_rates": "savingsplans-describe-savings-plans-offering-rates.json",
    "get_products": "pricing-get-products-bedrock.json",
}
DOCUMENTATION = {
    "describe_spot_price_history": "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html",
    "get_spot_placement_scores": "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_GetSpotPlacementScores.html",
    "describe_savings_plans_offering_rates": "https://docs.aws.amazon.com/savingsplans/latest/APIReference/API_DescribeSavingsPlansOfferingRates.html",
    "get_products": "https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html",
}


class PurchaseError(RunnerError):
    """No figure from this answer. `per_item`: the API answered, but not for this item (others
    may still be priced); otherwise the API itself failed (refused, unreachable) for this run."""

    def __init__(self, message: str, *, per_item: bool = False) -> None:
        super().__init__(message)
        self.per_item = per_item


@dataclass(frozen=True)
class PurchasePrice:
    """One way to buy what a priced item stands for (`service`, `item`, `region`, as its
    PriceRequest names it), in the unit of its billing: by the hour (Spot, Savings Plans,
    Provisioned Throughput per model unit) or by the token (Bedrock's tiers). `absent` says why
    there is no figure; `sku` names what was priced (a SKU, an offering id, the Spot pool)."""

    option: str
    service: str
    item: str
    region: str
    label: str
    source_api: str
    as_of: str | None = None
    live: bool = False
    usd_per_hour: float | None = None
    usd_per_million_input: float | None = None
    usd_per_million_output: float | None = None
    sku: str = ""
    detail: str = ""
    absent: str = ""
    # Spot only: GetSpotPlacementScores' score (1 to 10) for the count asked, and that count.
    placement_score: int | None = None
    placement_count: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.service, self.item, self.region)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object, where: object) -> PurchasePrice:
        if not isinstance(data, dict):
            raise RunnerError(f"{where}: a purchase price is {data!r}, not an object")
        try:
            return cls(**data)
        except TypeError as error:
            raise RunnerError(f"{where}: a purchase price does not read: {error}") from None

    def as_price(self, on_demand: Price) -> Price:
        """This figure as the price a month is computed with, in place of on-demand's."""
        return replace(
            on_demand,
            source=f"{self.source_api} ({self.label}{', ' + self.sku if self.sku else ''})",
            as_of=self.as_of or "",
            usd_per_hour=self.usd_per_hour if self.usd_per_hour is not None else on_demand.usd_per_hour,
            usd_per_million_input=self.usd_per_million_input
            if self.usd_per_million_input is not None
            else on_demand.usd_per_million_input,
            usd_per_million_output=self.usd_per_million_output
            if self.usd_per_million_output is not None
            else on_demand.usd_per_million_output,
            live=self.live,
            note=self.detail,
        )


def purchases_by_item(figures: list[PurchasePrice]) -> dict[tuple[str, str, str], list[PurchasePrice]]:
    """The purchase options a cost evidence file holds, by the item they price."""
    found: dict[tuple[str, str, str], list[PurchasePrice]] = {}
    for figure in figures:
        found.setdefault(figure.key, []).append(figure)
    return found


# --- where answers come from: the APIs, live, or the recorded snapshots -------------------------


@dataclass(frozen=True)
class Answer:
    """One API answer: as it came (transport fields dropped), its date, and whether it is live."""

    response: dict[str, Any]
    as_of: str
    live: bool


def snapshot_key(region: str, request: dict[str, Any]) -> str:
    kept = {name: value for name, value in request.items() if name not in VOLATILE}
    return json.dumps({"region": region, "request": kept}, sort_keys=True, default=str)


def plain(value: Any) -> Any:
    """An answer as JSON holds it: timestamps as ISO 8601 (UTC), transport fields dropped."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dict):
        return {name: plain(item) for name, item in value.items() if name not in TRANSPORT}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


@dataclass
class Snapshots:
    """The recorded answers: one JSON file per source API under `directory`, each entry the
    request (its region, its parameters), when it was recorded, and the answer, or why none."""

    directory: Path = field(default_factory=lambda: PRICE_SNAPSHOTS)
    loaded: dict[str, dict[str, Any]] = field(default_factory=dict)

    def path(self, operation: str) -> Path:
        return self.directory / SNAPSHOT_FILES[operation]

    def file(self, operation: str) -> dict[str, Any]:
        if operation not in self.loaded:
            path = self.path(operation)
            try:
                data = json.loads(path.read_text()) if path.exists() else {}
            except (OSError, json.JSONDecodeError) as error:
                raise RunnerError(f"{path}: not a price snapshot ({describe(error)})") from None
            data.setdefault("source_api", API_NAMES[operation])
            data.setdefault("documentation", DOCUMENTATION[operation])
            data.setdefault("entries", [])
            self.loaded[operation] = data
        return self.loaded[operation]

    def answer(self, operation: str, region: str, request: dict[str, Any]) -> Answer:
        key = snapshot_key(region, request)
        for entry in self.file(operation)["entries"]:
            if snapshot_key(entry.get("region", ""), entry.get("request") or {}) != key:
                continue
            if entry.get("response") is None or not entry.get("recorded_at"):
                raise PurchaseError(
                    f"{API_NAMES[operation]} snapshot: {entry.get('absent') or 'recorded without an answer'}",
                    per_item=True,
                )
            return Answer(entry["response"], str(entry["recorded_at"]), live=False)
        raise PurchaseError(
            f"{API_NAMES[operation]}: no recorded snapshot of this request in {self.path(operation).name}",
            per_item=True,
        )

    def record(self, operation: str, region: str, request: dict[str, Any], answer: Answer) -> None:
        entries = self.file(operation)["entries"]
        key = snapshot_key(region, request)
        entries[:] = [e for e in entries if snapshot_key(e.get("region", ""), e.get("request") or {}) != key]
        kept = {name: value for name, value in request.items() if name not in VOLATILE}
        entries.append(
            {"region": region, "request": plain(kept), "recorded_at": answer.as_of, "response": answer.response}
        )

    def save(self) -> list[Path]:
        written = []
        self.directory.mkdir(parents=True, exist_ok=True)
        for operation, data in self.loaded.items():
            path = self.path(operation)
            path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
            written.append(path)
        return written


Clients = Callable[[str, str], Any]


@dataclass
class Sources:
    """Where each answer comes from: the live APIs (a boto3 client per service and region, built
    by the front door), falling back to the snapshots once an API fails as a whole (said once per
    API); with no live clients, the snapshots alone. With `recording`, live answers are kept."""

    clients: Clients | None = None
    snapshots: Snapshots = field(default_factory=Snapshots)
    recording: Snapshots | None = None
    down: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)

    def call(self, operation: str, region: str, **request: Any) -> Answer:
        service, fixed = APIS[operation]
        asked_in = fixed or region
        api = API_NAMES[operation]
        if self.clients is not None and api not in self.down:
            from botocore.exceptions import BotoCoreError, ClientError
            from botocore.parsers import ResponseParserError

            try:
                response = getattr(self.clients(service, asked_in), operation)(**request)
            # An endpoint that answers what is no AWS answer (an HTML error page) is down as well.
            except (BotoCoreError, ClientError, ResponseParserError) as error:
                self.down[api] = describe(error)
                self.notices.append(f"{api}: {describe(error)}; purchase options from the recorded snapshots")
            else:
                answer = Answer(plain(response), now_iso(), live=True)
                self.queries.append({"api": api, "region": asked_in, "request": plain(request)})
                if self.recording is not None:
                    self.recording.record(operation, asked_in, request, answer)
                return answer
        return self.snapshots.answer(operation, asked_in, request)

    def pages(self, operation: str, region: str, items: str, token: str, **request: Any) -> tuple[list[Any], Answer]:
        """Every page of a paged answer (`token` names the request's and the answer's page token),
        with the first page's date and origin."""
        found: list[Any] = []
        first: Answer | None = None
        next_token = None
        while True:
            answer = self.call(operation, region, **request, **({token: next_token} if next_token else {}))
            first = first or answer
            found += answer.response.get(items) or []
            next_token = answer.response.get(token)
            if not next_token:
                return found, first


def origin(answer: Answer) -> str:
    return "" if answer.live else "recorded snapshot"


# --- EC2 Spot ----------------------------------------------------------------------------------


def spot_price(sources: Sources, request: PriceRequest, count: int, now: datetime) -> PurchasePrice:
    """The Spot price in effect in each zone (its latest change in the window) and their median,
    with the placement score for `count` instances in the region."""
    base = PurchasePrice(SPOT, request.service, request.item, request.region, "Spot median", SPOT_HISTORY_API)
    try:
        # botocore ec2 DescribeSpotPriceHistory: InstanceTypes, ProductDescriptions, StartTime, EndTime,
        # NextToken; answer SpotPriceHistory[].{AvailabilityZone, SpotPrice (string), Timestamp}.
        history, answer = sources.pages(
            "describe_spot_price_history",
            request.region,
            "SpotPriceHistory",
            "NextToken",
            InstanceTypes=[request.item],
            ProductDescriptions=SPOT_PRODUCTS,
            StartTime=now - SPOT_WINDOW,
            EndTime=now,
        )
    except PurchaseError as error:
        return replace(base, absent=str(error))
    latest: dict[str, tuple[str, float]] = {}
    for entry in history:
        zone, when, usd = entry.get("AvailabilityZone"), str(entry.get("Timestamp") or ""), entry.get("SpotPrice")
        if entry.get("InstanceType", request.item) != request.item or not zone or usd is None:
            continue
        if zone not in latest or when > latest[zone][0]:
            latest[zone] = (when, float(usd))
    if not latest:
        return replace(
            base, absent=f"{SPOT_HISTORY_API}: no Spot price for {request.item} in {request.region}", as_of=answer.as_of
        )
    zones = {zone: usd for zone, (_, usd) in sorted(latest.items())}
    median = statistics.median(zones.values())
    hourly, volume = raised(median, request)
    score, score_text = placement_score(sources, request, count)
    detail = "; ".join(
        part
        for part in (
            f"median of the price in effect in each of {len(zones)} zones ("
            + ", ".join(f"{zone} ${usd:g}" for zone, usd in zones.items())
            + f"), over the last {SPOT_WINDOW.days} days",
            score_text,
            INTERRUPTION_NOT_MEASURED,
            volume,
            origin(answer),
        )
        if part
    )
    return replace(
        base,
        source_api=f"{SPOT_HISTORY_API} + {PLACEMENT_API}",
        as_of=answer.as_of,
        live=answer.live,
        usd_per_hour=hourly,
        sku=f"{request.item} Linux/UNIX Spot, {request.region}",
        detail=detail,
        placement_score=score,
        placement_count=count,
    )


def placement_score(sources: Sources, request: PriceRequest, count: int) -> tuple[int | None, str]:
    """The placement score for `count` instances in the region and the words for it, or why there
    is none (the price still shows)."""
    try:
        # botocore ec2 GetSpotPlacementScores: InstanceTypes, TargetCapacity (required, 1..2e9),
        # TargetCapacityUnitType (units), SingleAvailabilityZone, RegionNames; answer
        # SpotPlacementScores[].{Region, AvailabilityZoneId, Score} (1 to 10, EC2 user guide).
        scores, _ = sources.pages(
            "get_spot_placement_scores",
            request.region,
            "SpotPlacementScores",
            "NextToken",
            InstanceTypes=[request.item],
            TargetCapacity=count,
            TargetCapacityUnitType="units",
            SingleAvailabilityZone=False,
            RegionNames=[request.region],
        )
    except PurchaseError as error:
        return None, f"placement score not known ({error})"
    found = [int(s["Score"]) for s in scores if s.get("Region", request.region) == request.region and s.get("Score")]
    if not found:
        return None, f"placement score not known ({PLACEMENT_API} gave none for {request.region})"
    return max(found), f"placement score {max(found)}/10 for {count} instance{'s' if count > 1 else ''}"


def raised(usd_per_hour: float, request: PriceRequest) -> tuple[float, str]:
    """An EC2 server's hour with its raised gp3 throughput, which Spot and Savings Plans do not discount."""
    with_volume = with_raised_throughput(usd_per_hour, request.volume_throughput_mbs)
    if with_volume is None:
        return usd_per_hour, ""
    return with_volume[0], f"{with_volume[1]} (not discounted)"


# --- Savings Plans -----------------------------------------------------------------------------


def usage_matches(usage_type: str, usage: str) -> bool:
    """A usage type names `usage` (`BoxUsage:g6.xlarge`), with or without its region prefix
    (`USE2-BoxUsage:g6.xlarge`; EC2's us-east-1 usage types have none)."""
    return usage_type == usage or usage_type.endswith(f"-{usage}")


def savings_plan_query(request: PriceRequest) -> tuple[str, str, dict[str, Any]] | None:
    """(plan, usage type, request) for an item a Savings Plan covers; None when none is looked up.
    The usage type is matched here rather than sent (`usageTypes` wants the region prefix, which
    EC2's us-east-1 usage types lack)."""
    if request.service == EC2:
        # Compute Savings Plans cover EC2 instances (savingsplans SavingsPlanType Compute, product EC2).
        query = {
            "savingsPlanTypes": ["Compute"],
            "products": ["EC2"],
            "serviceCodes": ["AmazonEC2"],
            "filters": [
                {"name": "region", "values": [request.region]},
                {"name": "instanceType", "values": [request.item]},
            ],
        }
        return "Compute", f"BoxUsage:{request.item}", query
    if request.service == SAGEMAKER and not request.item.startswith("ServerlessInf:"):
        usage, _, instance = request.item.rpartition(":")
        query = {
            "savingsPlanTypes": ["SageMaker"],
            "products": ["SageMaker"],
            "serviceCodes": ["AmazonSageMaker"],
            "filters": [
                {"name": "region", "values": [request.region]},
                {"name": "instanceType", "values": [instance]},
            ],
        }
        return "SageMaker", f"{usage or 'Host'}:{instance}", query
    return None


def savings_plan_prices(sources: Sources, request: PriceRequest) -> list[PurchasePrice]:
    """The 1-year and 3-year No Upfront rates of the plan that covers the item, by the hour."""
    query = savings_plan_query(request)
    if query is None:
        why = (
            "not looked up: Serverless Inference is billed per second of its memory size; this runner reads hourly instance rates only"
            if request.service == SAGEMAKER
            else "no Savings Plan applies"
        )
        return [
            PurchasePrice(
                option,
                request.service,
                request.item,
                request.region,
                sp_label(option, ""),
                SAVINGS_PLANS_API,
                absent=why,
            )
            for option in SAVINGS_PLAN_TERMS
        ]
    plan, usage, params = query
    blank = {
        option: PurchasePrice(
            option, request.service, request.item, request.region, sp_label(option, plan), SAVINGS_PLANS_API
        )
        for option in SAVINGS_PLAN_TERMS
    }
    try:
        # botocore savingsplans DescribeSavingsPlansOfferingRates: savingsPlanPaymentOptions,
        # savingsPlanTypes, products, serviceCodes, filters[{name: region|instanceType|..., values}],
        # nextToken, maxResults (<= 1000); answer searchResults[].{savingsPlanOffering.{offeringId,
        # paymentOption, planType, durationSeconds, currency}, rate (string), unit, usageType, operation}.
        rates, answer = sources.pages(
            "describe_savings_plans_offering_rates",
            request.region,
            "searchResults",
            "nextToken",
            savingsPlanPaymentOptions=[PAYMENT_OPTION],
            maxResults=1000,
            **params,
        )
    except PurchaseError as error:
        return [replace(figure, absent=str(error)) for figure in blank.values()]
    found = []
    for option, seconds in SAVINGS_PLAN_TERMS.items():
        matching = [
            rate
            for rate in rates
            if usage_matches(str(rate.get("usageType", "")), usage)
            and (plan != "Compute" or rate.get("operation") == "RunInstances")  # Linux/UNIX (EC2 pricing: RunInstances)
            and (rate.get("savingsPlanOffering") or {}).get("durationSeconds") == seconds
            and (rate.get("savingsPlanOffering") or {}).get("paymentOption") == PAYMENT_OPTION
            and (rate.get("savingsPlanOffering") or {}).get("currency", "USD") == "USD"
            and str(rate.get("unit", "Hrs")).lower().startswith("hr")
        ]
        usd = {float(rate["rate"]) for rate in matching if rate.get("rate") is not None}
        if len(usd) != 1:
            what = "no" if not usd else f"{len(usd)} different ({sorted(usd)})"
            found.append(
                replace(
                    blank[option],
                    as_of=answer.as_of,
                    absent=f"{SAVINGS_PLANS_API}: {what} {PAYMENT_OPTION} rate for {usage} in {request.region}",
                )
            )
            continue
        rate = matching[0]
        hourly, volume = raised(usd.pop(), request)
        found.append(
            replace(
                blank[option],
                as_of=answer.as_of,
                live=answer.live,
                usd_per_hour=hourly,
                sku=f"offering {rate['savingsPlanOffering'].get('offeringId', '?')}, usage type {rate.get('usageType')}",
                detail="; ".join(
                    part
                    for part in (
                        "a commitment of this rate every hour of the term; hours unused still pay it",
                        volume,
                        origin(answer),
                    )
                    if part
                ),
            )
        )
    return found


def sp_label(option: str, plan: str) -> str:
    years = SAVINGS_PLAN_TERMS[option] // YEAR_S
    return f"{years}-yr {plan + ' ' if plan else ''}Savings Plan, {PAYMENT_OPTION}"


# --- Bedrock -----------------------------------------------------------------------------------

TIER_LABELS = {BEDROCK_BATCH: "batch inference", BEDROCK_FLEX: "flex tier", BEDROCK_PRIORITY: "priority tier"}
PROVISIONED_LABELS = {
    PROVISIONED_1_MONTH: "Provisioned Throughput, 1-month commitment",
    PROVISIONED_6_MONTH: "Provisioned Throughput, 6-month commitment",
}


def bedrock_tier(attributes: dict[str, Any]) -> str | None:
    """Which of the token options a Bedrock product prices (None: standard, or none of them).
    The price list says a tier in four ways, as public readers of it note (stdapi-ai/stdapi.ai,
    stdapi/pricing.py `_resolve_tier`): a `service_tier` attribute, a last word of
    `inferenceType` ("Output tokens flex"), feature "Batch Inference", or the usage type
    (`...-batch`, `...-flex`, `...-priority`)."""
    tier = str(attributes.get("service_tier") or "").strip().lower()
    kind = str(attributes.get("inferenceType") or "").strip().lower()
    usage = str(attributes.get("usagetype") or "").lower().replace("_", "-")
    feature = str(attributes.get("feature") or "").strip().lower().replace(" ", "")
    if not tier:
        tier = next((word for word in ("flex", "priority", "batch") if kind.endswith(f" {word}")), "")
    if not tier and (feature == "batchinference" or "batch" in usage):
        tier = "batch"
    if not tier:
        tier = next((word for word in ("flex", "priority") if usage.endswith(word)), "standard")
    return {"batch": BEDROCK_BATCH, "flex": BEDROCK_FLEX, "priority": BEDROCK_PRIORITY}.get(tier)


def commitment(product: dict[str, Any], description: str) -> str | None:
    """The Provisioned Throughput commitment a product prices, from its feature, usage type and
    price description (bedrock CommitmentDuration: OneMonth, SixMonths); None: no commitment."""
    attributes = product.get("product", {}).get("attributes", {})
    text = (
        " ".join(str(attributes.get(name) or "") for name in ("feature", "usagetype", "commitment", "term")).lower()
        + f" {description.lower()}"
    )
    text = text.replace("-", " ").replace("_", " ")
    if any(word in text for word in ("6 month", "six month", "sixmonths", "6month")):
        return PROVISIONED_6_MONTH
    if any(word in text for word in ("1 month", "one month", "onemonth", "1month")):
        return PROVISIONED_1_MONTH
    return None


def bedrock_prices(sources: Sources, request: PriceRequest) -> list[PurchasePrice]:
    """Batch, flex and priority token prices and Provisioned Throughput by commitment, from the
    model's products in the region; the reserved tier absent (not in the price list)."""

    def blank(option: str, label: str) -> PurchasePrice:
        return PurchasePrice(option, request.service, request.item, request.region, label, PRICE_LIST_API)

    figures = {option: blank(option, label) for option, label in (TIER_LABELS | PROVISIONED_LABELS).items()}
    reserved = replace(blank(BEDROCK_RESERVED, "reserved tier"), absent=RESERVED_ABSENT)
    filters = [
        {"Type": "TERM_MATCH", "Field": "model", "Value": request.item},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": request.region},
    ]
    try:
        # botocore pricing GetProducts: ServiceCode, Filters[{Type TERM_MATCH, Field, Value}],
        # MaxResults, NextToken; answer PriceList[] (JSON strings) with product.{sku, attributes},
        # terms.OnDemand.*.priceDimensions.*.{unit, description, pricePerUnit.USD}.
        entries, answer = sources.pages(
            "get_products",
            request.region,
            "PriceList",
            "NextToken",
            ServiceCode=BEDROCK,
            Filters=filters,
            MaxResults=100,
        )
        products = [json.loads(entry) if isinstance(entry, str) else entry for entry in entries]
    except PurchaseError as error:
        return [replace(figure, absent=str(error)) for figure in figures.values()] + [reserved]
    except json.JSONDecodeError as error:
        why = f"{PRICE_LIST_API} {BEDROCK}: a PriceList entry is not JSON ({error.msg})"
        return [replace(figure, absent=why) for figure in figures.values()] + [reserved]
    tokens: dict[str, dict[str, set[tuple[float, str]]]] = {o: {"input": set(), "output": set()} for o in TIER_LABELS}
    hours: dict[str, set[tuple[float, str]]] = {o: set() for o in PROVISIONED_LABELS}
    for product in products:
        attributes = product.get("product", {}).get("attributes", {})
        sku = str(product.get("product", {}).get("sku") or "")
        feature = str(attributes.get("feature") or "").strip().lower()
        usage = str(attributes.get("usagetype") or "").lower()
        if feature.startswith("provisioned throughput"):
            for unit, usd, description in on_demand_dimensions(product):
                term = commitment(product, description)
                if term and usd > 0 and unit.lower().startswith(("hr", "hour")):
                    hours[term].add((usd, sku))
            continue
        # Cache reads and writes, cross-region global routing, latency-optimized and customized
        # models are other prices of their own, not the tier's token price.
        kind = str(attributes.get("inferenceType") or "").lower()
        if feature in ("model customization",) or any(
            word in f"{kind} {usage}" for word in ("cache", "global", "latency", "customization")
        ):
            continue
        tier = bedrock_tier(attributes)
        direction = "input" if "input" in kind else "output" if "output" in kind else None
        if tier is None or direction is None:
            continue
        for unit, usd, _ in on_demand_dimensions(product):
            if usd > 0:
                try:
                    tokens[tier][direction].add((per_million(unit, usd), sku))
                except RunnerError:
                    continue
    found = []
    for option, rates in tokens.items():
        ins, outs = {usd for usd, _ in rates["input"]}, {usd for usd, _ in rates["output"]}
        if len(ins) != 1 or len(outs) != 1:
            why = (
                f"{PRICE_LIST_API} {BEDROCK}: expected one input and one output {TIER_LABELS[option]} price for "
                f"{request.item} in {request.region}, found {sorted(ins)} and {sorted(outs)}"
            )
            found.append(replace(figures[option], as_of=answer.as_of, absent=why))
            continue
        skus = sorted({sku for _, sku in rates["input"] | rates["output"] if sku})
        found.append(
            replace(
                figures[option],
                as_of=answer.as_of,
                live=answer.live,
                usd_per_million_input=ins.pop(),
                usd_per_million_output=outs.pop(),
                sku=", ".join(f"SKU {sku}" for sku in skus),
                detail=origin(answer),
            )
        )
    for option, rates in hours.items():
        usd = {value for value, _ in rates}
        if len(usd) != 1:
            what = "no" if not usd else f"{len(usd)} different ({sorted(usd)})"
            why = f"{PRICE_LIST_API} {BEDROCK}: {what} hourly model-unit price for {request.item} in {request.region}"
            found.append(replace(figures[option], as_of=answer.as_of, absent=why))
            continue
        skus = sorted({sku for _, sku in rates if sku})
        found.append(
            replace(
                figures[option],
                as_of=answer.as_of,
                live=answer.live,
                usd_per_hour=usd.pop(),
                sku=", ".join(f"SKU {sku}" for sku in skus),
                detail="; ".join(
                    part
                    for part in (
                        "per model unit-hour, every hour of the commitment; a model unit's tokens per minute are not "
                        "published (Bedrock user guide, Provisioned Throughput)",
                        origin(answer),
                    )
                    if part
                ),
            )
        )
    return [*found, reserved]


# --- every item ----------------------------------------------------------------------------------


def item_key(request: PriceRequest) -> tuple[str, str, str]:
    """What a purchase option is filed under: the priced item, as its request names it."""
    return (request.service, request.item, request.region)


def purchase_prices(
    requests: list[PriceRequest],
    sources: Sources,
    counts: dict[PriceRequest, int] | None = None,
    now: datetime | None = None,
) -> tuple[dict[tuple[str, str, str], list[PurchasePrice]], list[str]]:
    """The purchase options of every priced item where they apply, by (service, item, region);
    and the lines to say (an API that failed as a whole, once)."""
    now = now or datetime.now(UTC)
    found: dict[tuple[str, str, str], list[PurchasePrice]] = {}
    for request in dict.fromkeys(requests):
        key = item_key(request)
        if key in found or not request.item or not request.region:
            continue
        if request.service == EC2:
            count = max(1, (counts or {}).get(request, 1))
            found[key] = [spot_price(sources, request, count, now), *savings_plan_prices(sources, request)]
        elif request.service == SAGEMAKER:
            spot = PurchasePrice(
                SPOT, request.service, request.item, request.region, "Spot", SPOT_HISTORY_API, absent=NO_SAGEMAKER_SPOT
            )
            found[key] = [spot, *savings_plan_prices(sources, request)]
        elif request.service == BEDROCK and request.item != MODEL_IMPORT_ITEM:
            found[key] = bedrock_prices(sources, request)
    return found, list(sources.notices)


# --- a month at a purchase option (runner.advise --purchase) ------------------------------------


@dataclass(frozen=True)
class Purchased:
    """The price a month is computed with at a purchase option, what the arithmetic opens with,
    and what the latency verdict must say (`latency`: why the measured latency does not apply)."""

    price: Price | None
    label: str
    latency: str = ""
    provisioned: PurchasePrice | None = None


def purchased(option: str, price: Price | None, figures: list[PurchasePrice], kind: str) -> Purchased:
    """`price` at `option` where the option applies and has a figure; else on-demand, said why."""
    if option == ON_DEMAND or price is None:
        return Purchased(price, "")
    figure = next((f for f in figures if f.option == option), None)
    applies = (option in HOURLY_OPTIONS and price.usd_per_hour is not None) or (
        option in TOKEN_OPTIONS + PROVISIONED_OPTIONS and price.per_token
    )
    if not applies or figure is None:
        return Purchased(price, f"on-demand ({option} does not apply to {kind})")
    if figure.absent:
        return Purchased(price, f"on-demand ({figure.label} absent: {figure.absent})")
    if option in PROVISIONED_OPTIONS:
        return Purchased(
            figure.as_price(price), f"{figure.label} ${figure.usd_per_hour:g} per model unit-hour", provisioned=figure
        )
    latency = ""
    if option in (BEDROCK_BATCH, BEDROCK_FLEX):
        latency = f"latency at the {TIER_LABELS[option]} not measured (measured on the standard tier)"
    return Purchased(figure.as_price(price), f"{figure.label}", latency=latency)
