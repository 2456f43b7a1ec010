"""Pricing a server AWS does not bill, as the user says (`runner.cost`, `runner.advise`): with no
AWS account the embedded model or an `--endpoint` server has no price, and cost and advice led
nowhere. `--price-as NAME=INSTANCE_TYPE` prices a backend by the hour as the instance it stands for
(the Pricing API with AWS, else the dated offline table), `--price NAME=USD_PER_HOUR` at a rate
the user gives. Each is written into the backend's entry in the evidence (`priced_as`, with the
flag as given), the rows say `as g6.xlarge` or `rate given`, and the figures stay labelled with
where they were measured (not AWS)."""

from __future__ import annotations

import copy
import re

from catalog.prices import EC2, OFFLINE_PRICES, PRICING_API_REGION, SAGEMAKER, offline_price
from runner.core.backend_entries import PricedAs
from runner.core.errors import RunnerError
from runner.core.flags import finite
from runner.core.typed_json import JsonObject

# An instance type as AWS names them: g6.xlarge, ml.g6.xlarge, inf2.xlarge, m7i.large.
INSTANCE_TYPE = re.compile(r"(ml\.)?[a-z][a-z0-9-]*\.[a-z0-9]+")


def offline_types() -> list[str]:
    """The instance types the offline table prices by the hour (EC2 and SageMaker endpoints)."""
    return [p.item for p in OFFLINE_PRICES if p.service in (EC2, SAGEMAKER) and ":" not in p.item and p.usd_per_hour]


def parse_priced_as(rates: list[str], instances: list[str], *, offline: bool) -> dict[str, PricedAs]:
    """`--price NAME=USD_PER_HOUR` and `--price-as NAME=INSTANCE_TYPE`, by backend; a flag that
    cannot be priced is one line (without the Pricing API, an instance type must be in the
    offline table)."""
    given: dict[str, PricedAs] = {}
    for flag, values in (("--price", rates), ("--price-as", instances)):
        for text in values:
            name, sep, value = (part.strip() for part in text.partition("="))
            shown = f"{flag} {text}"
            if not sep or not name or not value:
                raise RunnerError(
                    f"{shown}: expected {flag} BACKEND={'USD_PER_HOUR' if flag == '--price' else 'INSTANCE_TYPE'}"
                )
            if name in given:
                raise RunnerError(f"{shown}: {name} is priced twice ({given[name].flag}); price each backend once")
            given[name] = rate(shown, value) if flag == "--price" else instance(shown, value, offline=offline)
    return given


def rate(shown: str, value: str) -> PricedAs:
    try:
        usd = float(value)
    except ValueError:
        raise RunnerError(f"{shown}: {value!r} is not a number of US dollars an hour") from None
    flag, _, text = shown.partition(" ")
    finite(flag, usd, "US dollars an hour", text=text)
    if not usd > 0:
        raise RunnerError(f"{shown}: a rate must be above 0 US dollars an hour")
    return PricedAs(flag=shown, usd_per_hour=usd)


def instance(shown: str, value: str, *, offline: bool) -> PricedAs:
    if not INSTANCE_TYPE.fullmatch(value):
        raise RunnerError(f"{shown}: {value!r} is not an instance type (such as g6.xlarge or ml.g6.xlarge)")
    service = SAGEMAKER if value.startswith("ml.") else EC2
    if offline and offline_price(service, value, PRICING_API_REGION) is None:
        raise RunnerError(
            f"{shown}: {value} is not in the offline price table ({', '.join(offline_types())}); with AWS "
            "credentials the Pricing API prices any type, or give the rate: --price BACKEND=USD_PER_HOUR"
        )
    return PricedAs(flag=shown, instance_type=value)


def price_as(inputs: list[tuple[str, JsonObject]], given: dict[str, PricedAs]) -> list[tuple[str, JsonObject]]:
    """The evidence with each backend the user priced marked so in its entry (copies: the files
    read are not changed); a name that is no backend of the evidence is one line."""
    if not given:
        return inputs
    names = {b.get("name") for _, data in inputs for b in data.get("backends") or [] if isinstance(b, dict)}
    for name, priced in given.items():
        if name not in names:
            known = ", ".join(sorted(str(n) for n in names if n)) or "none"
            raise RunnerError(f"{priced.flag}: no backend {name} in the evidence given (its backends: {known})")
    marked = []
    for path, data in inputs:
        data = copy.deepcopy(data)
        for backend in data.get("backends") or []:
            if isinstance(backend, dict) and backend.get("name") in given:
                backend["priced_as"] = given[backend["name"]].to_json()
        marked.append((path, data))
    return marked
