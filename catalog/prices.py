"""On-demand prices the cost command falls back to when the Pricing API cannot be reached.

Every figure carries its source and date, and `runner.cost` records which one it used: a price
read live from the Pricing API always wins. The table holds us-east-1 list prices (the survey's
own pricing region); a backend in another region is priced from it with a note saying so.

Each billing model has its own unit: an instance by the hour (EC2, SageMaker real-time, async
and batch transform), SageMaker Serverless Inference by the second at its memory size (and the
data it processes by the GB), Custom Model Import by the Custom Model Unit (CMU) minute while a
model copy is active plus a monthly storage charge per CMU, Bedrock's managed models by the
token. Figures this app could not check against AWS say so in their source (`verified` False).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

# AWS's own convention for a month of on-demand use (8760 hours / 12), and the days in it.
HOURS_PER_MONTH = 730
DAYS_PER_MONTH = HOURS_PER_MONTH / 24
# The Pricing API answers in us-east-1 (and two other regions) whatever region it prices.
PRICING_API_REGION = "us-east-1"

# What a fleet is bought at beside on-demand (Spot, Savings Plans, Bedrock's batch, tiers and
# Provisioned Throughput: runner/costing/purchase.py), as the APIs answered, recorded: one dated
# JSON file per source API, each entry the request that produced it and the answer, or why none.
PRICE_SNAPSHOTS = Path(__file__).with_name("price_snapshots")

EC2 = "AmazonEC2"
SAGEMAKER = "AmazonSageMaker"
BEDROCK = "AmazonBedrock"

SURVEY_EC2_SOURCE = (
    "AWS Pricing API GetProducts (Linux, shared tenancy, on demand), as recorded in the survey's "
    "docs/article/evidence/ec2-prices.txt (repository xbill9/aws-inference-strands)"
)
SURVEY_TABLE_SOURCE = "the survey's published cost table (on-demand list prices, AWS Pricing API)"
SERVERLESS_SOURCE = (
    "AWS SageMaker AI pricing page (aws.amazon.com/sagemaker/ai/pricing, Serverless Inference, us-east-1): "
    "$0.0000200 per GB-second, linear in memory size. Not read from that page here (its tables are "
    "rendered by script); consistent with a Price List API reading of USE1-ServerlessInf:Mem-3GB at "
    "$0.00006 per second, effective 2026-09-01, quoted in a public repository on 2026-09-09. UNVERIFIED"
)
SERVERLESS_DATA_SOURCE = (
    "AWS SageMaker AI pricing page, Serverless Inference data processed (in and out), us-east-1: $0.016 per GB. "
    "UNVERIFIED (not read from the page here)"
)
ASYNC_BATCH_SOURCE = (
    "the survey's ml.g6.xlarge real-time hosting figure ($1.1267/h), assumed to be the asynchronous "
    "(usage type AsyncInf:) and batch transform (Tsform:) rate too: the Price List readings found list "
    "them at the Host: rate of the same instance (eu-west-3 ml.g6.xlarge, 2026-10-04; us-east-1 "
    "ml.g6e.2xlarge, 2026-09-20; eu-west-3 Tsform ml.g4dn.xlarge). UNVERIFIED for ml.g6.xlarge in us-east-1"
)
MODEL_IMPORT_SOURCE = (
    "the figures commonly quoted for Amazon Bedrock Custom Model Import in us-east-1 (aws.amazon.com/"
    "bedrock/pricing, Custom Model Import, CMU version 1.0): $0.0785 per CMU per minute, $1.95 per CMU "
    "per month of storage. UNVERIFIED: AWS's page was not readable here, and one public source quotes "
    "$0.05718 per CMU-minute; the rate depends on the model's customModelUnitsVersion (GetImportedModel)"
)

# ECR private storage, us-east-1: what an image the app keeps between deploys costs a month.
ECR_USD_PER_GB_MONTH = 0.10
ECR_STORAGE_SOURCE = (
    "Amazon ECR pricing page (aws.amazon.com/ecr/pricing), private repository storage, us-east-1: $0.10 per "
    "GB-month, as a public pricing summary of March 2026 quotes it. UNVERIFIED (not read from the page here)"
)

# gp3 throughput above its included 125 MB/s, us-east-1: what a root volume the app gives more
# throughput (g5g, inf2: catalog/backends.py root_volume_throughput_mbs) costs beside its instance.
GP3_BASELINE_MBS = 125
GP3_USD_PER_MBS_MONTH = 0.040
GP3_THROUGHPUT_SOURCE = (
    "Amazon EBS pricing page (aws.amazon.com/ebs/pricing), gp3, us-east-1: 125 MB/s included, $0.040 per "
    "provisioned MB/s-month above it, as public pricing summaries quote it. UNVERIFIED (not read from the page here)"
)


def raised_throughput_usd_per_hour(throughput_mbs: int) -> float:
    """What a gp3 volume's throughput above the included 125 MB/s adds to its server's hour."""
    return round(max(0, throughput_mbs - GP3_BASELINE_MBS) * GP3_USD_PER_MBS_MONTH / HOURS_PER_MONTH, 4)


# SageMaker Serverless Inference bills compute per second at the configured memory size.
SERVERLESS_USD_PER_GB_SECOND = 0.0000200
SERVERLESS_USD_PER_GB_PROCESSED = 0.016
# Custom Model Import: billed in 5-minute windows from the first successful call while a model
# copy is active (Bedrock user guide, "Calculate the cost of running a custom model").
MODEL_IMPORT_WINDOW_MINUTES = 5
# How many CMUs a model copy takes is known only after import (GetImportedModel
# `customModelUnits.customModelUnitsPerModelCopy`); until evidence says otherwise, Qwen2.5-1.5B is
# taken as 1, the smallest allocation (an assumption, marked wherever it is used).
DEFAULT_CUSTOM_MODEL_UNITS = 1
DEFAULT_CUSTOM_MODEL_UNITS_NOTE = (
    "1 CMU assumed for Qwen2.5-1.5B (GetImportedModel customModelUnits gives the count after import)"
)
MODEL_IMPORT_ITEM = "Custom Model Import"


def serverless_item(memory_mb: int) -> str:
    """The Price List usage type (without its region prefix) of serverless compute at a memory size."""
    return f"ServerlessInf:Mem-{memory_mb // 1024}GB"


def async_item(instance_type: str) -> str:
    return f"AsyncInf:{instance_type}"


def batch_item(instance_type: str) -> str:
    return f"Tsform:{instance_type}"


@dataclass(frozen=True)
class Price:
    """One on-demand price, in the unit of its billing model: per instance hour; per million input
    and output tokens; per second of serverless compute (and per GB processed); per CMU-minute
    (and per CMU-month of storage)."""

    service: str
    item: str
    region: str
    source: str
    as_of: str
    usd_per_hour: float | None = None
    usd_per_million_input: float | None = None
    usd_per_million_output: float | None = None
    usd_per_second: float | None = None
    usd_per_gb_processed: float | None = None
    usd_per_unit_minute: float | None = None
    usd_per_unit_month: float | None = None
    # True when read from the Pricing API in this run; False for the offline table.
    live: bool = False
    # False when the figure could not be checked against AWS (the source says how far it was).
    verified: bool = True
    note: str = ""

    @property
    def per_token(self) -> bool:
        return self.usd_per_million_output is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _serverless_prices() -> tuple[Price, ...]:
    return tuple(
        Price(
            SAGEMAKER,
            serverless_item(memory),
            "us-east-1",
            f"{SERVERLESS_SOURCE}; {SERVERLESS_DATA_SOURCE}",
            "2026-09-09",
            usd_per_second=round(SERVERLESS_USD_PER_GB_SECOND * memory / 1024, 10),
            usd_per_gb_processed=SERVERLESS_USD_PER_GB_PROCESSED,
            verified=False,
        )
        for memory in (1024, 2048, 3072, 4096, 5120, 6144)
    )


OFFLINE_PRICES: tuple[Price, ...] = (
    Price(EC2, "g6.xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=0.8048),
    Price(EC2, "g5g.2xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=0.556),
    Price(EC2, "inf2.xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=0.7582),
    Price(EC2, "trn1.2xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=1.3438),
    Price(SAGEMAKER, "ml.g6.xlarge", "us-east-1", SURVEY_TABLE_SOURCE, "2026-10-12", usd_per_hour=1.1267),
    Price(
        SAGEMAKER,
        async_item("ml.g6.xlarge"),
        "us-east-1",
        ASYNC_BATCH_SOURCE,
        "2026-10-12",
        usd_per_hour=1.1267,
        verified=False,
    ),
    Price(
        SAGEMAKER,
        batch_item("ml.g6.xlarge"),
        "us-east-1",
        ASYNC_BATCH_SOURCE,
        "2026-10-12",
        usd_per_hour=1.1267,
        verified=False,
    ),
    *_serverless_prices(),
    Price(
        BEDROCK,
        "Nova Micro",
        "us-east-1",
        SURVEY_TABLE_SOURCE,
        "2026-10-12",
        usd_per_million_input=0.035,
        usd_per_million_output=0.14,
    ),
    Price(
        BEDROCK,
        MODEL_IMPORT_ITEM,
        "us-east-1",
        MODEL_IMPORT_SOURCE,
        "2026-12-01",
        usd_per_unit_minute=0.0785,
        usd_per_unit_month=1.95,
        verified=False,
    ),
)

# Bedrock model ids (inference profiles included) -> the `model` attribute of their Pricing API products.
BEDROCK_PRICE_NAMES = {
    "us.amazon.nova-micro-v1:0": "Nova Micro",
    "amazon.nova-micro-v1:0": "Nova Micro",
}


def offline_price(service: str, item: str, region: str) -> Price | None:
    """The table's price for `item` in `region`; failing that its us-east-1 price, marked as such."""
    exact = next((p for p in OFFLINE_PRICES if (p.service, p.item, p.region) == (service, item, region)), None)
    if exact is not None:
        return exact
    fallback = next(
        (p for p in OFFLINE_PRICES if (p.service, p.item, p.region) == (service, item, PRICING_API_REGION)), None
    )
    if fallback is None:
        return None
    note = f"{PRICING_API_REGION} price; the offline table lists none for {region}"
    return replace(fallback, note=f"{note}; {fallback.note}" if fallback.note else note)
