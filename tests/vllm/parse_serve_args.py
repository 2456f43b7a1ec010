"""Runs inside the vLLM environment: parses command lines with vLLM's own argument parser.

stdin: a JSON list of {"name", "argv", "style"}; style `serve` is `vllm serve MODEL FLAGS...`
(the vllm/vllm-openai image's entrypoint), `api_server` is `python -m
vllm.entrypoints.openai.api_server FLAGS...` (the SageMaker DLC's). stdout: one JSON list of
{"name", "ok", "error", "parsed"}. A tool-call parser vLLM does not register is an error too.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

FIELDS = (
    "model",
    "max_model_len",
    "enable_auto_tool_choice",
    "tool_call_parser",
    "gpu_memory_utilization",
    "dtype",
    "port",
)


def parse(argv: list[str], style: str) -> dict[str, object]:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.tool_parsers import ToolParserManager
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve" if style == "serve" else "api_server"))
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            args = parser.parse_args(argv)
            if style == "serve" and getattr(args, "model_tag", None):
                args.model = args.model_tag  # what `vllm serve MODEL` does with its positional
            validate_parsed_serve_args(args)
    except SystemExit:
        lines = errors.getvalue().strip().splitlines() or ["argument parsing failed"]
        return {"ok": False, "error": lines[-1]}
    except Exception as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}
    parser_name = args.tool_call_parser
    if parser_name and parser_name not in ToolParserManager.list_registered():
        return {"ok": False, "error": f"tool-call parser {parser_name!r} is not registered in this vLLM"}
    return {"ok": True, "error": None, "parsed": {k: getattr(args, k, None) for k in FIELDS}}


def main() -> None:
    cases = json.load(sys.stdin)
    with contextlib.redirect_stdout(sys.stderr):  # vLLM logs on import
        results = [{"name": case["name"], **parse(case["argv"], case["style"])} for case in cases]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
