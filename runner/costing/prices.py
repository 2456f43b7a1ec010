"""On-demand prices from the AWS Pricing API, with the offline table as the fallback.

GetProducts answers with PriceList entries (JSON strings): `product.attributes` and
`terms.OnDemand.<offer>.priceDimensions.<rate>.{unit, pricePerUnit.USD}`. EC2 instances are
priced for Linux, shared tenancy, no pre-installed software, capacity status `Used`; SageMaker
endpoints from the `ML Instance` products of component `Hosting`; SageMaker asynchronous and
batch transform instances from the instance's products whose usage type ends `AsyncInf:<type>`
or `Tsform:<type>`; SageMaker Serverless Inference from the `ML Serverless` products whose usage
type ends `ServerlessInf:Mem-<N>GB` (per second); Bedrock models from their on-demand input and
output token products (priced per 1,000 tokens); Custom Model Import from the Bedrock products of
feature `Custom Model Import` (per CMU-minute, and per CMU-month of storage). A failed call is one
line, and the run goes on with the offline table, saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from catalog import BACKENDS
from catalog.backends import SERVERLESS_MEMORY_SIZES_MB
from catalog.prices import (
    BEDROCK,
    BEDROCK_PRICE_NAMES,
    EC2,
    GP3_BASELINE_MBS,
    GP3_THROUGHPUT_SOURCE,
    MODEL_IMPORT_ITEM,
    PRICING_API_REGION,
    SAGEMAKER,
    Price,
    async_item,
    batch_item,
    offline_price,
    serverless_item,
)
from catalog.serving import serving
from runner.core.backend_entries import BackendEntry
from runner.core.batch_jobs import BatchJob
from runner.core.errors import RunnerError, describe
from runner.core.evidence import now_iso
from runner.core.references import resolve
from runner.costing.arithmetic import with_raised_throughput
from runner.costing.billing_models import billing_model

PRICING_SOURCE = "AWS Pricing API GetProducts"
# A rate the user gave (`--price NAME=USD_PER_HOUR`): priced as given, never looked up.
GIVEN = "given"


class PricingError(RunnerError):
    """The Pricing API could not give one clear price. `per_item`: the API answered, but not with
    one price for this item (others may still be priced); otherwise the API itself failed."""

    def __init__(self, message: str, *, per_item: bool = False) -> None:
        super().__init__(message)
        self.per_item = per_item


def term_filters(**terms: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": field_name, "Value": value} for field_name, value in terms.items()]


def on_demand_dimensions(product: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(unit, USD, description) for every on-demand price dimension of one PriceList entry."""
    found = []
    for offer in (product.get("terms", {}).get("OnDemand") or {}).values():
        for dimension in (offer.get("priceDimensions") or {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if usd is None:
                continue
            found.append((dimension.get("unit", ""), float(usd), dimension.get("description", "")))
    return found


def per_million(unit: str, usd: float) -> float:
    """A token price in whatever unit the list uses, as USD per million tokens."""
    lowered = unit.lower().replace(",", "")
    if "1k" in lowered or "1000" in lowered:
        return usd * 1000
    if "1m" in lowered or "1000000" in lowered:
        return usd
    if "token" in lowered:
        return usd * 1_000_000
    raise PricingError(f"Pricing API: token price in an unknown unit {unit!r}", per_item=True)


@dataclass
class PriceList:
    """GetProducts through one boto3 `pricing` client (us-east-1); every query is recorded."""

    client: Any
    queries: list[dict[str, Any]] = field(default_factory=list)

    def products(self, service: str, filters: list[dict[str, str]]) -> list[dict[str, Any]]:
        from botocore.exceptions import BotoCoreError, ClientError

        products: list[dict[str, Any]] = []
        token = None
        try:
            while True:
                kwargs: dict[str, Any] = {"ServiceCode": service, "Filters": filters, "MaxResults": 100}
                if token:
                    kwargs["NextToken"] = token
                page = self.client.get_products(**kwargs)
                products += [json.loads(item) if isinstance(item, str) else item for item in page.get("PriceList", [])]
                token = page.get("NextToken")
                if not token:
                    break
        except (BotoCoreError, ClientError) as error:
            raise PricingError(f"Pricing API {service}: {describe(error)}") from None
        except json.JSONDecodeError as error:
            raise PricingError(f"Pricing API {service}: a PriceList entry is not JSON ({error.msg})") from None
        self.queries.append({"service": service, "filters": filters, "products": len(products)})
        return products

    def hourly(self, service: str, item: str, region: str, filters: list[dict[str, str]]) -> Price:
        products = self.products(service, filters)
        usd = one_price(service, products, item, region, unit="hr", missing="no hourly on-demand price")
        return Price(service, item, region, PRICING_SOURCE, now_iso(), usd_per_hour=usd, live=True)

    def ec2_instance(self, instance_type: str, region: str) -> Price:
        filters = term_filters(
            instanceType=instance_type,
            regionCode=region,
            operatingSystem="Linux",
            tenancy="Shared",
            preInstalledSw="NA",
            capacitystatus="Used",
            licenseModel="No License required",
        )
        return self.hourly(EC2, instance_type, region, filters)

    def sagemaker_hosting(self, instance_type: str, region: str) -> Price:
        filters = term_filters(
            instanceName=instance_type, regionCode=region, productFamily="ML Instance", component="Hosting"
        )
        return self.hourly(SAGEMAKER, instance_type, region, filters)

    def sagemaker_usage(self, usage: str, instance_type: str, region: str) -> Price:
        """An instance priced under one SageMaker usage type (`AsyncInf`, `Tsform`): the instance's
        products in the region, kept where the usage type ends `<usage>:<instance type>`."""
        item = f"{usage}:{instance_type}"
        products = self.products(SAGEMAKER, term_filters(instanceName=instance_type, regionCode=region))
        usd = one_price(SAGEMAKER, products, item, region, unit="hr", missing="no hourly on-demand price", usage=item)
        return Price(SAGEMAKER, item, region, PRICING_SOURCE, now_iso(), usd_per_hour=usd, live=True)

    def sagemaker_serverless(self, memory_mb: int, region: str) -> Price:
        """Serverless Inference compute at one memory size, per second (usage type
        `<region>-ServerlessInf:Mem-<N>GB`; provisioned concurrency has usage types of its own)."""
        item = serverless_item(memory_mb)
        products = self.products(SAGEMAKER, term_filters(regionCode=region, productFamily="ML Serverless"))
        per_second = one_price(
            SAGEMAKER, products, item, region, unit="second", missing="no per-second price", usage=item
        )
        fallback = offline_price(SAGEMAKER, item, region)
        return Price(
            SAGEMAKER,
            item,
            region,
            PRICING_SOURCE,
            now_iso(),
            usd_per_second=per_second,
            # Data processed is not looked up: the offline table's figure, said in the note.
            usd_per_gb_processed=fallback.usd_per_gb_processed if fallback else None,
            live=True,
            note="data processed from the offline table" if fallback else "",
        )

    def bedrock_model_import(self, region: str) -> Price:
        """Custom Model Import: the per CMU-minute inference price and the per CMU-month storage
        price of the Bedrock products of feature `Custom Model Import`."""
        products = self.products(BEDROCK, term_filters(regionCode=region, feature=MODEL_IMPORT_ITEM))
        minute: set[float] = set()
        month: set[float] = set()
        for product in products:
            for unit, usd, description in on_demand_dimensions(product):
                text = f"{unit} {description} {_usage_type(product)}".lower()
                if usd <= 0:
                    continue
                if "month" in text or "storage" in text:
                    month.add(usd)
                elif "min" in text:
                    minute.add(usd)
        if len(minute) != 1 or len(month) != 1:
            raise PricingError(
                f"Pricing API {BEDROCK}: expected one per CMU-minute and one per CMU-month price for "
                f"{MODEL_IMPORT_ITEM} in {region}, found {sorted(minute)} and {sorted(month)}",
                per_item=True,
            )
        return Price(
            BEDROCK,
            MODEL_IMPORT_ITEM,
            region,
            PRICING_SOURCE,
            now_iso(),
            usd_per_unit_minute=minute.pop(),
            usd_per_unit_month=month.pop(),
            live=True,
        )

    def bedrock_tokens(self, model: str, region: str) -> Price:
        products = self.products(BEDROCK, term_filters(model=model, regionCode=region, feature="On-demand Inference"))
        rates: dict[str, set[float]] = {"input": set(), "output": set()}
        for product in products:
            attributes = product.get("product", {}).get("attributes", {})
            if attributes.get("service_tier", "standard") != "standard":
                continue
            kind = attributes.get("inferenceType", "").lower()
            direction = "input" if "input" in kind else "output" if "output" in kind else None
            if direction is None or "cache" in kind or "batch" in kind:
                continue
            rates[direction] |= {per_million(unit, usd) for unit, usd, _ in on_demand_dimensions(product)}
        if len(rates["input"]) != 1 or len(rates["output"]) != 1:
            raise PricingError(
                f"Pricing API {BEDROCK}: expected one input and one output token price for {model} in {region}, "
                f"found {sorted(rates['input'])} and {sorted(rates['output'])}",
                per_item=True,
            )
        return Price(
            BEDROCK,
            model,
            region,
            PRICING_SOURCE,
            now_iso(),
            usd_per_million_input=rates["input"].pop(),
            usd_per_million_output=rates["output"].pop(),
            live=True,
        )


@dataclass(frozen=True)
class PriceRequest:
    """What one backend is billed by: an instance type by the hour, or a Bedrock model by the token.
    An EC2 server whose root volume's gp3 throughput the app raised (catalog/backends.py) names it:
    its hour costs that much more (catalog/prices.py raised_throughput_usd_per_hour)."""

    service: str
    item: str
    region: str
    volume_throughput_mbs: int = 0
    # GIVEN: the hourly rate the user gave.
    usd_per_hour: float | None = None


def one_price(
    service: str,
    products: list[dict[str, Any]],
    item: str,
    region: str,
    *,
    unit: str,
    missing: str,
    usage: str | None = None,
) -> float:
    """The one on-demand price per `unit` (`hr`, `second`) the products give, kept to those whose
    usage type ends `usage` when given; none, or several different ones, is a PricingError."""
    prices = {
        usd
        for product in products
        if usage is None or _usage_type(product).endswith(f"-{usage}") or _usage_type(product) == usage
        for dimension_unit, usd, _ in on_demand_dimensions(product)
        if dimension_unit.lower().startswith(unit) and usd > 0
    }
    if len(prices) != 1:
        what = missing if not prices else f"{len(prices)} different prices {sorted(prices)}"
        raise PricingError(f"Pricing API {service}: {what} for {item} in {region}", per_item=True)
    return prices.pop()


def _usage_type(product: dict[str, Any]) -> str:
    return str(product.get("product", {}).get("attributes", {}).get("usagetype", ""))


def lookup(request: PriceRequest, price_list: PriceList) -> Price:
    if request.service == EC2:
        return price_list.ec2_instance(request.item, request.region)
    if request.service == SAGEMAKER:
        usage, _, rest = request.item.partition(":")
        if usage == "ServerlessInf":
            return price_list.sagemaker_serverless(
                int(rest.removeprefix("Mem-").removesuffix("GB")) * 1024, request.region
            )
        if usage in ("AsyncInf", "Tsform"):
            return price_list.sagemaker_usage(usage, rest, request.region)
        return price_list.sagemaker_hosting(request.item, request.region)
    if request.item == MODEL_IMPORT_ITEM:
        return price_list.bedrock_model_import(request.region)
    return price_list.bedrock_tokens(request.item, request.region)


def price_all(
    requests: list[PriceRequest], price_list: PriceList | None
) -> tuple[dict[PriceRequest, Price], list[str]]:
    """Live prices where the API answers, the dated offline table where it does not (said once per
    fault). After a fault that is not about one item (no connection, no permission), the API is
    not asked again in this run."""
    prices: dict[PriceRequest, Price] = {}
    notices: list[str] = []
    for request in dict.fromkeys(requests):
        if request.service == GIVEN:
            prices[request] = given_price(request)
            continue
        if price_list is not None:
            try:
                prices[request] = lookup(request, price_list)
                continue
            except PricingError as error:
                notices.append(f"{error}; using the offline table")
                if not error.per_item:
                    price_list = None
        fallback = offline_price(request.service, request.item, request.region)
        if fallback is not None:
            prices[request] = fallback
        else:
            notices.append(f"no price for {request.item} in {request.region}: not in the offline table")
    return {request: with_volume(request, price) for request, price in prices.items()}, notices


def given_price(request: PriceRequest) -> Price:
    """The rate a user gave for a backend, as a price of its own (not a list price: said so)."""
    return Price(
        GIVEN,
        request.item,
        request.region,
        f"{request.item}: a rate given on the command line, not a list price",
        now_iso(),
        usd_per_hour=request.usd_per_hour,
    )


def with_volume(request: PriceRequest, price: Price) -> Price:
    """The instance's hour with its root volume's raised gp3 throughput added, said in the note."""
    raised = (
        None
        if price.usd_per_hour is None
        else with_raised_throughput(price.usd_per_hour, request.volume_throughput_mbs)
    )
    if raised is None:
        return price
    usd_per_hour, note = raised
    return replace(
        price,
        usd_per_hour=usd_per_hour,
        note=f"{price.note}; {note}" if price.note else note,
        source=f"{price.source}; {GP3_THROUGHPUT_SOURCE}",
        verified=False,
    )


def bedrock_price_name(model_id: str) -> str:
    return BEDROCK_PRICE_NAMES.get(model_id, model_id)


REFERENCE_BEDROCK = next(spec for spec in BACKENDS if billing_model(serving(spec.kind).billing).per_token)


def priced_kind(backend: BackendEntry) -> str | None:
    """The kind a backend is billed as: its own, or for a known backend's name given with
    `--endpoint NAME=URL` (the survey's own manual forward), its catalog entry's."""
    catalog_kind = backend.spec.kind
    if serving(backend.kind).openai and priced_as_catalog(catalog_kind):
        return catalog_kind
    return backend.kind


def serverless_memory_mb(backend: BackendEntry) -> int | None:
    """The memory size a serverless endpoint was deployed with (stack output, else catalog)."""
    memory = backend.output.memory_mb or backend.spec.memory_mb
    return memory if memory in SERVERLESS_MEMORY_SIZES_MB else None


def price_request(backend: BackendEntry) -> PriceRequest | None:
    """What a backend (as an evidence file lists it) is billed by; None when AWS does not bill it.

    A known backend's name given with `--endpoint NAME=URL` (the survey's own manual forward:
    `--endpoint g6=http://127.0.0.1:8001`) is that backend on its AWS instance, so it is priced
    as the catalog's entry, in its first region when the evidence names none."""
    if backend.priced_as is not None:
        return priced_as_request(backend)
    kind = priced_kind(backend)
    output, catalog = backend.output, backend.spec
    region = backend.region or output.region or next(iter(catalog.regions), None)
    instance_type = output.instance_type or catalog.instance_type
    reference = serving(kind).price_request
    if not reference:
        return None
    request: Request = resolve(reference)
    return request(backend, instance_type, region)


def priced_as_request(backend: BackendEntry) -> PriceRequest:
    """What the user priced a backend as: the rate given, or the instance type it stands for by
    the hour (an `ml.` type as a SageMaker endpoint, any other as EC2), in its region, else the
    offline table's (us-east-1)."""
    given = backend.priced_as
    assert given is not None
    if given.usd_per_hour is not None:
        return PriceRequest(GIVEN, given.flag, "", usd_per_hour=given.usd_per_hour)
    instance_type = given.instance_type or ""
    service = SAGEMAKER if instance_type.startswith("ml.") else EC2
    return PriceRequest(service, instance_type, backend.region or backend.output.region or PRICING_API_REGION)


Request = Callable[[BackendEntry, str | None, str | None], "PriceRequest | None"]


# What each way of serving is billed by, named in its serving row (`price_request`), each called
# (backend, instance type, region).
def ec2_server_request(backend: BackendEntry, instance_type: str | None, region: str | None) -> PriceRequest | None:
    """An EC2 server: its instance type, and its root volume's gp3 throughput where the app raised it."""
    return PriceRequest(EC2, instance_type, region, volume_throughput(backend)) if instance_type and region else None


def sagemaker_instance_request(
    backend: BackendEntry, instance_type: str | None, region: str | None
) -> PriceRequest | None:
    return PriceRequest(SAGEMAKER, instance_type, region) if instance_type and region else None


def sagemaker_async_request(
    backend: BackendEntry, instance_type: str | None, region: str | None
) -> PriceRequest | None:
    return PriceRequest(SAGEMAKER, async_item(instance_type), region) if instance_type and region else None


def sagemaker_batch_request(
    backend: BackendEntry, instance_type: str | None, region: str | None
) -> PriceRequest | None:
    return PriceRequest(SAGEMAKER, batch_item(instance_type), region) if instance_type and region else None


def volume_throughput(backend: BackendEntry) -> int:
    """The root volume's gp3 throughput above the included one (its catalog entry's), else 0."""
    throughput = backend.spec.root_volume_throughput_mbs
    return throughput if throughput is not None and throughput > GP3_BASELINE_MBS else 0


def serverless_request(backend: BackendEntry, instance_type: str | None, region: str | None) -> PriceRequest | None:
    memory = serverless_memory_mb(backend)
    return PriceRequest(SAGEMAKER, serverless_item(memory), region) if memory and region else None


def bedrock_import_request(backend: BackendEntry, instance_type: str | None, region: str | None) -> PriceRequest:
    return PriceRequest(BEDROCK, MODEL_IMPORT_ITEM, region or PRICING_API_REGION)


def bedrock_request(backend: BackendEntry, instance_type: str | None, region: str | None) -> PriceRequest:
    return PriceRequest(BEDROCK, bedrock_price_name(backend.model_id or ""), region or PRICING_API_REGION)


def priced_as_catalog(kind: str) -> bool:
    """Whether a known backend given with `--endpoint` is priced as its catalog entry's kind: every
    kind priced by an instance or a model unit (a managed model's API has no URL to give)."""
    path = serving(kind)
    return bool(path.price_request) and not billing_model(path.billing).per_token


def batch_price_request(job: BatchJob, region: str | None) -> PriceRequest | None:
    """A batch transform job is billed by its instance type under the `Tsform` usage type."""
    instance_type = job.instance_type
    if not instance_type or not region:
        return None
    return PriceRequest(SAGEMAKER, batch_item(instance_type), region)
