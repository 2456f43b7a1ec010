"""The agent's OpenAI-compatible model: requests a real vLLM accepts."""

from __future__ import annotations

from runner.agent.models import StrictOpenAIModel

SPEC = {"name": "count_ids", "description": "Count ids.", "inputSchema": {"json": {"type": "object", "properties": {}}}}
USER = [{"role": "user", "content": [{"text": "How many?"}]}]


def model(**kwargs) -> StrictOpenAIModel:
    return StrictOpenAIModel(client_args={"base_url": "http://127.0.0.1:9/v1", "api_key": "x"}, model_id="m", **kwargs)


def test_no_tools_means_no_tools_field_and_no_tool_choice():
    # vLLM answers HTTP 400 to `tools: []`; Strands' own provider sends it for an agent without tools.
    request = model().format_request(USER, [])
    assert "tools" not in request and "tool_choice" not in request
    request = model().format_request(USER, None, tool_choice={"auto": {}})
    assert "tools" not in request and "tool_choice" not in request


def test_tools_go_out_as_given():
    request = model().format_request(USER, [SPEC])
    assert [t["function"]["name"] for t in request["tools"]] == ["count_ids"]
    assert "tool_choice" not in request


def test_a_forced_tool_is_named_on_the_first_call_only():
    forced = model(force_first_tool="count_ids")
    first = forced.format_request(USER, [SPEC])
    assert first["tool_choice"] == {"type": "function", "function": {"name": "count_ids"}}
    after_the_call = [
        *USER,
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "count_ids", "input": {}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": [{"text": "8"}]}}],
        },
    ]
    assert "tool_choice" not in forced.format_request(after_the_call, [SPEC])
