"""Where runner.sweep looks: the four US regions, wherever the app went, wherever it may fail over
to; every commercial region with `--regions all`; a region the account never enabled is skipped."""

from __future__ import annotations

from botocore.exceptions import ClientError

from catalog.config import PLACEMENT_ENV, write_placement
from catalog.offerings import COMMERCIAL_REGIONS, US_REGIONS
from runner.cloud.cleanup import leftovers


def test_the_default_covers_the_us_where_the_app_went_and_where_it_may_fail_over(tmp_path, monkeypatch):
    monkeypatch.setenv(PLACEMENT_ENV, str(tmp_path / "placement.json"))
    write_placement("InferenceGpuStack", "eu-central-1")
    regions = leftovers.default_regions()
    assert regions[:4] == list(US_REGIONS)
    assert "eu-central-1" in regions
    assert len(regions) == len(set(regions))


def test_all_is_every_commercial_region():
    assert len(COMMERCIAL_REGIONS) == 34 and set(US_REGIONS) <= set(COMMERCIAL_REGIONS)


def test_a_region_not_enabled_is_told_from_a_refused_call():
    def error(code: str) -> ClientError:
        return ClientError({"Error": {"Code": code, "Message": "x"}}, "DescribeStacks")

    assert leftovers.region_not_enabled(error("UnrecognizedClientException"))
    assert leftovers.region_not_enabled(error("InvalidClientTokenId"))
    assert not leftovers.region_not_enabled(error("AccessDenied"))
    assert not leftovers.region_not_enabled(RuntimeError("boom"))
