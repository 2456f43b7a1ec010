"""On-demand prices the cost command falls back to when the Pricing API cannot be reached.

Every figure carries its source and date, and `runner.cost` records which one it used: a price
read live from the Pricing API always wins. The table holds us-east-1 list prices (the survey's
own pricing region); a backend in another region is priced from it with a note saying so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

# AWS's own convention for a month of on-demand use (8760 hours / 12).
HOURS_PER_MONTH = 730
# The Pricing API answers in us-east-1 (and two other regions) whatever region it prices.
PRICING_API_REGION = "us-east-1"

EC2 = "AmazonEC2"
SAGEMAKER = "AmazonSageMaker"
BEDROCK = "AmazonBedrock"

SURVEY_EC2_SOURCE = (
    "AWS Pricing API GetProducts (Linux, shared tenancy, on demand), as recorded in the survey's "
    "docs/article/evidence/ec2-prices.txt (repository xbill9/aws-inference-strands)"
)
SURVEY_TABLE_SOURCE = "the survey's published cost table (on-demand list prices, AWS Pricing API)"


@dataclass(frozen=True)
class Price:
    """One on-demand price: per instance hour, or per million input and output tokens."""

    service: str
    item: str
    region: str
    source: str
    as_of: str
    usd_per_hour: float | None = None
    usd_per_million_input: float | None = None
    usd_per_million_output: float | None = None
    # True when read from the Pricing API in this run; False for the offline table.
    live: bool = False
    note: str = ""

    @property
    def per_token(self) -> bool:
        return self.usd_per_million_output is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


OFFLINE_PRICES: tuple[Price, ...] = (
    Price(EC2, "g6.xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=0.8048),
    Price(EC2, "g5g.2xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=0.556),
    Price(EC2, "inf2.xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=0.7582),
    Price(EC2, "trn1.2xlarge", "us-east-1", SURVEY_EC2_SOURCE, "2026-10-05T03:07:49Z", usd_per_hour=1.3438),
    Price(SAGEMAKER, "ml.g6.xlarge", "us-east-1", SURVEY_TABLE_SOURCE, "2026-10-12", usd_per_hour=1.1267),
    Price(
        BEDROCK,
        "Nova Micro",
        "us-east-1",
        SURVEY_TABLE_SOURCE,
        "2026-10-12",
        usd_per_million_input=0.035,
        usd_per_million_output=0.14,
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
    return replace(fallback, note=f"{PRICING_API_REGION} price; the offline table lists none for {region}")
