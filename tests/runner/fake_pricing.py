"""A loopback AWS Pricing API (JSON 1.1 protocol, `AWSPriceListService.GetProducts`) answering
with PriceList entries shaped like the real ones: JSON strings holding `product.attributes` and
`terms.OnDemand.<offer>.priceDimensions.<rate>`. A real boto3 `pricing` client talks to it, so
botocore's own request building and response parsing are exercised; it pages with NextToken and
can answer AccessDeniedException as an account without pricing:GetProducts does.

An entry is (service, attributes, unit, USD) or (service, attributes, unit, USD, description).
The SageMaker usage types (`USE1-ServerlessInf:Mem-6GB`, `USE2-AsyncInf:ml.g6.xlarge`,
`USE2-Tsform:ml.g6.xlarge`, `USE1-Host:...`) and product family `ML Serverless` are the Price
List's own; the Custom Model Import units ("Custom Model Unit per Min", "... per Month") follow
the Price List's wording as public readers of it quote it, not a product read here."""

from __future__ import annotations

import json
from typing import Any

from tests.runner.loopback import LoopbackServer, QuietHandler, boto3_client


def price_entry(service: str, attributes: dict[str, str], unit: str, usd: str, description: str = "") -> str:
    sku = f"SKU{abs(hash((service, tuple(sorted(attributes.items()))))) % 10**12:012d}"
    offer = f"{sku}.JRTCKXETXF"
    return json.dumps(
        {
            "product": {"productFamily": attributes.get("productFamily", ""), "attributes": attributes, "sku": sku},
            "serviceCode": service,
            "terms": {
                "OnDemand": {
                    offer: {
                        "priceDimensions": {
                            f"{offer}.6YS6EN2CT7": {
                                "unit": unit,
                                "endRange": "Inf",
                                "description": description,
                                "appliesTo": [],
                                "rateCode": f"{offer}.6YS6EN2CT7",
                                "beginRange": "0",
                                "pricePerUnit": {"USD": usd},
                            }
                        },
                        "sku": sku,
                        "effectiveDate": "2026-11-01T00:00:00Z",
                        "offerTermCode": "JRTCKXETXF",
                        "termAttributes": {},
                    }
                }
            },
            "version": "20261101000000",
            "publicationDate": "2026-11-01T00:00:00Z",
        }
    )


class FakePricing(LoopbackServer):
    def __init__(self, entries: list[tuple], *, page_size: int = 1) -> None:
        self.entries = entries  # (service, attributes, unit, USD[, description])
        self.page_size = page_size
        self.requests: list[dict[str, Any]] = []
        self.deny = False
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.read_body() or b"{}")
                server.requests.append(body)
                if server.deny:
                    self._send(
                        400,
                        {
                            "__type": "AccessDeniedException",
                            "Message": "User is not authorized to perform: pricing:GetProducts",
                        },
                    )
                    return
                terms = {f["Field"]: f["Value"] for f in body.get("Filters", [])}
                matched = [
                    price_entry(service, attributes, unit, usd, *rest)
                    for service, attributes, unit, usd, *rest in server.entries
                    if service == body["ServiceCode"] and all(attributes.get(k) == v for k, v in terms.items())
                ]
                start = int(body.get("NextToken") or 0)
                page = matched[start : start + server.page_size]
                answer: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": page}
                if start + server.page_size < len(matched):
                    answer["NextToken"] = str(start + server.page_size)
                self._send(200, answer)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self.send_body(status, json.dumps(payload).encode(), {"content-type": "application/x-amz-json-1.1"})

        super().__init__(Handler)

    def client(self):
        return boto3_client("pricing", self.url)
