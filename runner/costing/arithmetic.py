"""The pricing arithmetic, each sum written once: dollars over the tokens they bought, an hourly
price over the output tokens an hour makes, Bedrock's token prices with the input each output
token took, the break-even between the two, instances billed every hour of a month or for so many
seconds, Custom Model Import's 5-minute windows, the data serverless bills, and an hour with its
root volume's raised gp3 throughput. The cost of a measured level (`measured`), a workload's
month (`advice`), what bills now (`billing_now`) and the tables that show a $ figure all compute
with these rather than each with its own copy."""

from __future__ import annotations

from catalog.prices import HOURS_PER_MONTH, MODEL_IMPORT_WINDOW_MINUTES, Price, raised_throughput_usd_per_hour

# Serverless data processed: request and response bodies, taken as 4 bytes per prompt and output
# token (English text runs about 4 characters a token; the JSON envelope is left out).
PAYLOAD_BYTES_PER_TOKEN = 4


def usd_per_million(usd: float, tokens: float) -> float:
    """Dollars spread over the tokens they bought, per million tokens."""
    return usd / tokens * 1_000_000


def usd_per_million_output(usd_per_hour: float, output_tok_s: float) -> float:
    """An instance's hourly price spread over the output tokens it makes in that hour."""
    return usd_per_million(usd_per_hour, output_tok_s * 3600)


def bedrock_per_million_output(price: Price, input_per_output: float | None) -> float:
    """Bedrock's output price plus the input tokens each output token took (when measured)."""
    extra = (input_per_output or 0.0) * (price.usd_per_million_input or 0.0)
    return (price.usd_per_million_output or 0.0) + extra


def breakeven_tok_s(usd_per_hour: float, bedrock_usd_per_million_output: float) -> float:
    """Sustained output tokens/s above which a 24x7 instance costs less than Bedrock per token."""
    return usd_per_hour / 3600 / (bedrock_usd_per_million_output / 1_000_000)


def usd_per_month_24x7(usd_per_hour: float, instances: int = 1) -> float:
    """Instances billed every hour of a month (HOURS_PER_MONTH)."""
    return instances * HOURS_PER_MONTH * usd_per_hour


def instance_seconds_usd(seconds: float, instances: int, usd_per_hour: float) -> float:
    """Instances billed by the hour for so many seconds each (a transform job's billable time)."""
    return seconds / 3600 * instances * usd_per_hour


def model_import_windows_usd(windows: float, units: int, usd_per_unit_minute: float) -> float:
    """Custom Model Import: so many 5-minute windows of a copy of `units` CMUs."""
    return windows * MODEL_IMPORT_WINDOW_MINUTES * units * usd_per_unit_minute


def payload_gigabytes(tokens: float) -> float:
    """Serverless data processed by so many prompt and output tokens (PAYLOAD_BYTES_PER_TOKEN each)."""
    return tokens * PAYLOAD_BYTES_PER_TOKEN / 1e9


def with_raised_throughput(usd_per_hour: float, throughput_mbs: int) -> tuple[float, str] | None:
    """An EC2 server's hour with its root volume's gp3 throughput above the included one added
    (catalog/prices.py), and the note that says so; None when the app did not raise it."""
    extra = raised_throughput_usd_per_hour(throughput_mbs)
    if not extra:
        return None
    note = f"+ ${extra}/h for the root volume's {throughput_mbs} MB/s of gp3 throughput"
    return round(usd_per_hour + extra, 4), note
