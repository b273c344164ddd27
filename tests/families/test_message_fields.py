"""The whole message: reasoning, tool calls, tool results and tools, rendered as the official template renders them
(through transformers, ``tools=`` given), supervised by the principle, counted where a template writes nothing.

Expected texts are the official templates' renders; expected supervised texts are written out by hand from them.
"""

from __future__ import annotations

import json
from functools import lru_cache

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
from sftpack.families.render import TemplateError
from sftpack.tokenizers.loading import load_vocab

DATE = "2025-08-05"  # the gpt-oss profiles' pinned clock
# families whose renderer writes every field the template writes: (template, what the template reads besides, options)
NATIVE = {"qwen3_5": ("qwen3_5.jinja", {}, None), "qwen3": ("qwen3.jinja", {}, None),
          "gpt_oss": ("gpt_oss.jinja", {"strftime_now": lambda fmt: DATE}, {"date": DATE})}


def _official(conversation: dict, template: str, **variables) -> str:
    return jinja_render(template, template_form(conversation["messages"]), tools=conversation["tools"], **variables)


def _calls_per_message(conversation: dict) -> int:
    return max(len(m.get("tool_calls", ())) for m in conversation["messages"])


@pytest.mark.parametrize("family", NATIVE)
def test_native_renderer_equals_the_official_template_on_the_battery(family):
    file, variables, options = NATIVE[family]
    template = official_template(file)
    render = get_family(family).renderer(options)
    cases = BATTERY + [(f"forged-{k}", c) for k, c in enumerate(forged_conversations(40, seed=3))]
    compared = 0
    for name, conversation in cases:
        checked = check_conversation(conversation)
        if family == "gpt_oss" and _calls_per_message(conversation) > 1:
            # gpt-oss's template writes a message's first call alone: refused rather than written without the others
            with pytest.raises(TemplateError, match="one tool call per message"):
                render(checked.messages, tools=checked.tools)
            continue
        try:
            official = _official(conversation, template, **variables)
        except Exception as e:  # the template refuses it (gpt-oss: content and reasoning on a call): so must the renderer
            with pytest.raises(TemplateError):
                render(checked.messages, tools=checked.tools)
            assert "Cannot pass both content and thinking" in str(e), name
            continue
        assert render(checked.messages, tools=checked.tools).text == official, name
        compared += 1
    assert compared >= 30


@pytest.mark.parametrize("family", NATIVE)
def test_arguments_as_a_json_string_render_as_the_object(family):
    render = get_family(family).renderer(NATIVE[family][2])
    as_string = json.loads(json.dumps(WEATHER_CONVERSATION))
    for m in as_string["messages"]:
        for call in m.get("tool_calls", ()):
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    a, b = check_conversation(WEATHER_CONVERSATION), check_conversation(as_string)
    assert render(a.messages, tools=a.tools).text == render(b.messages, tools=b.tools).text


@pytest.mark.parametrize("family", NATIVE)
def test_declared_fields_are_what_the_official_template_writes(family):
    from sftpack.families.jinja import JinjaRenderer

    file, variables, options = NATIVE[family]
    entry = get_family(family)
    jinja = JinjaRenderer(official_template(file), load_profile("Qwen3.5-122B-A10B").rule, variables, [])
    written = written_fields(jinja.text_of)
    assert not entry.unrendered & written  # nothing declared unrendered is written
    assert entry.unrendered | entry.fields == set(FIELDS)  # every field is either handled or declared ignored
    native = written_fields(lambda m, tools: entry.renderer(options)(m, tools=tools).text)
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


GPT_OSS_RUNS = [  # a final answer follows the call: the template drops the call's analysis; <|call|> ends the turn
    ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>',
    "<|channel|>analysis<|message|>The tool says 18 and clear.<|end|><|start|>assistant<|channel|>final<|message|>"
    "It is 18 degrees and clear in Paris.<|return|>",
]


def test_gpt_oss_analysis_and_commentary_channels_supervised(o200k_caches):
    from sftpack.tokenizers.offline import load_o200k_harmony

    encoder = make_encoder(load_profile("gpt-oss-20b"), load_o200k_harmony())
    text, spans = encoder.prepare(WEATHER_CONVERSATION)
    assert [text[a:b] for a, b in spans] == GPT_OSS_RUNS
    assert "// The current weather of a city.\ntype get_weather = (_: {\ncity: string,\nunit?: \"c\" | \"f\",\n})" in text
    tool_result = '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"{\\"temperature'
    assert tool_result in text and not any(a <= text.index(tool_result) < b for a, b in spans)
    # the call alone, last: its analysis is kept (no final answer follows), in the same turn
    text, spans = encoder.prepare({"tools": WEATHER_CONVERSATION["tools"], "messages": WEATHER_CONVERSATION["messages"][:3]})
    assert [text[a:b] for a, b in spans] == [
        "<|channel|>analysis<|message|>I should call the weather tool.<|end|><|start|>assistant to=functions.get_weather"
        '<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>']


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


def test_a_field_the_native_renderer_does_not_write_without_a_template_is_skipped(tmp_path):
    from helpers.family_vocabs import save_stand_in_dir

    directory = save_stand_in_dir("minimax_m2", tmp_path / "tok")  # MiniMax's renderer writes no tool calls
    config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.pop("chat_template", None)
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    profile = load_profile("MiniMax-M2")
    encoder = make_encoder(profile, load_vocab(profile, str(directory), allow_unpinned=True))
    assert encoder.vocab.info.chat_template is None and "tool_calls" not in profile.family.fields
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


def test_tool_rows_are_the_same_whatever_the_workers(tmp_path, capsys):
    from sftpack.cli import main

    source = tmp_path / "mixed.jsonl"
    rows = [json.dumps({"id": f"{name}-{k}", **conversation}) for k in range(6) for name, conversation in BATTERY]
    source.write_text("\n".join(rows) + "\n")
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        assert main(["build", "--model", "Qwen3.5-122B-A10B", "--source", str(source), "--rows", "4", "--row-tokens",
                     "1024", "--out", str(out), "--workers", workers, "--no-progress"]) == 0
        outputs.append([p.read_bytes() for p in sorted(out.glob("*.parquet"))])
    assert outputs[0] == outputs[1]


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


# ------------------------------------------------------------------------------------------------- gpt-oss's tools block
_words = st.text(alphabet="abcxyz_", min_size=1, max_size=6)
_leaf = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "number", "integer", "boolean", "null", "object"])},
                          optional={"description": _words, "nullable": st.booleans(),
                                    "default": st.one_of(st.integers(), _words, st.none())}),
    st.fixed_dictionaries({"type": st.just("string"), "enum": st.lists(_words, min_size=1, max_size=3)},
                          optional={"default": _words}),
    st.fixed_dictionaries({"type": st.lists(st.sampled_from(["string", "object", "array"]), min_size=1, max_size=3)}),
    st.just({}),
)
_spec = st.recursive(_leaf, lambda inner: st.one_of(
    st.fixed_dictionaries({"type": st.just("array")}, optional={"items": inner, "nullable": st.booleans()}),
    st.fixed_dictionaries({"type": st.just("object")}, optional={
        "properties": st.dictionaries(_words, inner, max_size=3), "required": st.lists(_words, max_size=2)}),
    st.fixed_dictionaries({"oneOf": st.lists(inner, min_size=1, max_size=3)}),
), max_leaves=6)
_tool = st.builds(lambda name, description, properties, required: {"type": "function", "function": {
    "name": name, "description": description,
    "parameters": {"type": "object", "properties": properties, "required": required}}},
    _words, _words, st.dictionaries(_words, _spec, max_size=4), st.lists(_words, max_size=3))


@settings(max_examples=150, deadline=None)
@given(tools=st.lists(_tool, min_size=1, max_size=3))
def test_gpt_oss_tools_block_equals_the_template_on_generated_schemas(tools):
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    render = get_family("gpt_oss").renderer({"date": DATE})
    try:
        official = _gpt_oss_template().render(messages=messages, tools=tools, add_generation_prompt=False,
                                             strftime_now=lambda fmt: DATE)
    except Exception:  # a default the template cannot concatenate (an enum's or oneOf's non-string default)
        with pytest.raises(TemplateError):
            render(messages, tools=tools)
        return
    assert render(messages, tools=tools).text == official


@lru_cache(maxsize=1)
def _gpt_oss_template():
    from transformers.utils.chat_template_utils import _compile_jinja_template

    return _compile_jinja_template(official_template("gpt_oss.jinja"))


def test_values_no_template_can_write_are_refused_by_field():
    import datetime

    call = {"function": {"name": "f", "arguments": {"when": datetime.date(2025, 1, 1)}}}
    for conversation, reason in (
        ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [call]}], "tool_calls_invalid"),
        ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
          "tools": [{"type": "function", "function": {"name": "f", "x": b"\x00"}}]}, "tools_invalid"),
    ):
        with pytest.raises(Skip) as info:
            check_conversation(conversation)
        assert info.value.reason == reason and "not JSON" in info.value.detail


def test_gpt_oss_tool_conversation_equals_openai_harmony_token_for_token(o200k_caches):
    """openai-harmony, an independent renderer of the same format, writes the tools namespace, the commentary call
    and the tool result as the template does; its training render drops a final turn's analysis, which the template
    keeps, so the final turn here carries none. Masks: each assistant message's tokens but its ``<|start|>assistant``."""
    from openai_harmony import (Author, Conversation, DeveloperContent, HarmonyEncodingName, Message, Role,
                                SystemContent, ToolDescription, load_harmony_encoding)

    from sftpack.tokenizers.offline import load_o200k_harmony

    harmony = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    conversation = json.loads(json.dumps(WEATHER_CONVERSATION))
    del conversation["messages"][-1]["reasoning_content"]
    function = conversation["tools"][0]["function"]
    developer = DeveloperContent.new().with_instructions("You are a helpful assistant.").with_function_tools(
        [ToolDescription.new(function["name"], function["description"], function["parameters"])])
    result = json.dumps(conversation["messages"][3]["content"])
    messages = [
        (Message.from_role_and_content(Role.SYSTEM, SystemContent.new().with_conversation_start_date(DATE)), False),
        (Message.from_role_and_content(Role.DEVELOPER, developer), False),
        (Message.from_role_and_content(Role.USER, "What is the weather in Paris?"), False),
        (Message.from_role_and_content(Role.ASSISTANT, '{"city": "Paris"}').with_channel("commentary")
         .with_recipient("functions.get_weather").with_content_type("json"), True),
        (Message.from_author_and_content(Author.new(Role.TOOL, "functions.get_weather"), result)
         .with_recipient("assistant").with_channel("commentary"), False),
        (Message.from_role_and_content(Role.ASSISTANT, "It is 18 degrees and clear in Paris.").with_channel("final"), True),
    ]
    tokens = harmony.render_conversation_for_training(Conversation.from_messages([m for m, _ in messages]))
    tokens = list(tokens)
    header = len(harmony.encode("<|start|>assistant", allowed_special="all"))
    mask, cursor = [0] * len(tokens), 0
    for k, (message, supervised) in enumerate(messages):
        if not supervised:
            continue
        alone = list(harmony.render(message))  # an assistant message renders alone as in the conversation...
        if k == len(messages) - 1:  # ...but for the last one's end: <|return|>, what the model emits to stop
            alone[-1] = harmony.encode("<|return|>", allowed_special="all")[0]
        at = next(i for i in range(cursor, len(tokens)) if tokens[i:i + len(alone)] == alone)
        mask[at + header:at + len(alone)] = [1] * (len(alone) - header)
        cursor = at + len(alone)
    ids, ours = make_encoder(load_profile("gpt-oss-20b"), load_o200k_harmony())(conversation)
    assert ids.tolist() == tokens
    assert ours.tolist() == mask and sum(mask) > 20
