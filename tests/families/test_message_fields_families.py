"""Families whose native renderer writes text alone (GLM-4.5, GLM-4.7-Flash, MiniMax-M2, Nemotron-3, Kimi, Gemma 4):
conversations with reasoning, tool calls, tool results and tools go through the tokenizer's own template (the Jinja
path). The rows' text is the official template's render through transformers; the spans are checked by hand on the
issue's conversation and by the principle on the battery; control text forged into arguments, results and reasoning
never moves a span."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.family_vocabs import save_stand_in_dir, save_template_stand_in_dir
from helpers.shared import jinja_render, official_template
from helpers.small_vocabs import kimi_test_files
from helpers.tool_conversations import BATTERY, FORGED, WEATHER_CONVERSATION, template_form
from sftpack.families.conversation import Skip, check_conversation
from sftpack.families.encode import make_encoder
from sftpack.families.mask import close_final_turn
from sftpack.families.profiles import load_profile
from sftpack.tokenizers.loading import load_vocab

# model -> (template file, how its tokenizer directory is made)
MODELS = {
    "GLM-4.5": ("glm4_5.jinja", "glm4_5"), "GLM-4.7-Flash": ("glm4_7_flash.jinja", "glm4_7_flash"),
    "MiniMax-M2": ("minimax_m2.jinja", "minimax_m2"), "Nemotron-3-Nano-30B-A3B": ("nemotron3_nano.jinja", "nemotron3_nano"),
    "Kimi-K2.6": ("kimi_k26.kite1.0_renamed.jinja", "kimi"), "Gemma-4-31B": ("gemma4.jinja", "gemma4"),
}


@pytest.fixture(scope="module")
def encoders(tmp_path_factory):
    out = {}
    for model, (file, kind) in MODELS.items():
        template = official_template(file)
        directory = tmp_path_factory.mktemp(kind)
        if kind == "kimi":
            kimi_test_files(directory)
        elif kind == "gemma4":
            save_template_stand_in_dir(directory, template, "<turn|>", "<bos>")
        else:
            save_stand_in_dir(kind, directory)
        profile = load_profile(model)
        out[model] = make_encoder(profile, load_vocab(profile, str(directory), allow_unpinned=True))
    return out


def _official(encoder, conversation: dict) -> str:
    variables = {k: v for k, v in (("bos_token", getattr(encoder.vocab, "bos_token", None)),) if v}
    return jinja_render(encoder.vocab.info.chat_template, template_form(conversation["messages"]),
                        tools=conversation["tools"], **variables)


@pytest.mark.parametrize("model", MODELS)
def test_tool_conversations_render_as_the_official_template(encoders, model):
    encoder = encoders[model]
    assert encoder.routing.fallback is not None and "tool_calls" not in encoder.routing.native
    rendered = 0
    for name, conversation in BATTERY:
        try:
            text, spans = encoder.prepare(conversation)
        except Skip as skip:  # only where the template itself cannot be followed, named
            assert skip.reason == "template_error", (name, skip)
            continue
        rendered += 1
        official = _official(encoder, conversation)
        final = encoder.rule.final_turn_end if conversation["messages"][-1]["role"] == "assistant" else ""
        assert text == official + final, name  # GLM: its rule's final_turn_end after a last assistant turn
        checked = check_conversation(conversation)
        supervised = "".join(text[a:b] for a, b in spans)
        for m in checked.messages:
            for call in m.get("tool_calls", ()):  # every call's arguments are supervised (Kimi writes ids, not names)
                for value in call["function"]["arguments"].values():
                    forms = (value, json.dumps(value, ensure_ascii=False)[1:-1]) if isinstance(value, str) else ("",)
                    assert any(form in supervised for form in forms), (name, value)
            if m["role"] in ("tool", "user", "system") and len(m["content"]) > 3:  # never results, user, system
                assert not any(m["content"] in text[a:b] for a, b in spans), (name, m["content"])
        for tool in conversation["tools"] or ():
            assert tool["function"]["description"] not in supervised
    assert rendered >= len(BATTERY) - 1


# Written by hand from each official template's render of the issue's conversation: the turn that calls the tool
# (with the reasoning the template keeps) and the answer, through the turn's end; the tool result never.
HAND = {
    "GLM-4.5": ["\n<think>I should call the weather tool.</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                "<arg_value>Paris</arg_value>\n</tool_call><|observation|>",
                "\n<think>The tool says 18 and clear.</think>\nIt is 18 degrees and clear in Paris.<|user|>"],
    "GLM-4.7-Flash": ["I should call the weather tool.</think><tool_call>get_weather<arg_key>city</arg_key>"
                      "<arg_value>Paris</arg_value></tool_call><|observation|>",
                      "The tool says 18 and clear.</think>It is 18 degrees and clear in Paris.<|user|>"],
    "Gemma-4-31B": ['<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><turn|>\n',
                    "It is 18 degrees and clear in Paris.<turn|>\n"],  # the launch template writes no reasoning
    "MiniMax-M2": ['I should call the weather tool.\n</think>\n\n\n<minimax:tool_call>\n<invoke name="get_weather">\n'
                   '<parameter name="city">Paris</parameter>\n</invoke>\n</minimax:tool_call>[e~[\n',
                   "The tool says 18 and clear.\n</think>\n\nIt is 18 degrees and clear in Paris.[e~[\n"],
    "Nemotron-3-Nano-30B-A3B": ["I should call the weather tool.\n</think>\n<tool_call>\n<function=get_weather>\n"
                                "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n<|im_end|>\n",
                                "The tool says 18 and clear.\n</think>\nIt is 18 degrees and clear in Paris.<|im_end|>\n"],
    # Kimi writes a call's id, not its name, and this template keeps no reasoning here: empty think blocks
    "Kimi-K2.6": ['</think><|tool_calls_section_begin|><|tool_call_begin|>call_1<|tool_call_argument_begin|>'
                  '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|><|im_end|>',
                  "</think>It is 18 degrees and clear in Paris.<|im_end|>"],
}


@pytest.mark.parametrize("model", HAND)
def test_masks_by_hand_on_the_issue_conversation(encoders, model):
    text, spans = encoders[model].prepare(WEATHER_CONVERSATION)
    assert [text[a:b] for a, b in spans] == HAND[model]


_piece = st.one_of(st.sampled_from(FORGED), st.text(alphabet="abc 東é", min_size=1, max_size=4))
_forged = st.lists(_piece, min_size=1, max_size=3).map(lambda parts: "w" + "".join(parts) + "w")


def _neutral(text: str) -> str:
    return "".join(c if c.isspace() else "w" for c in text)


def _conversation(reasoning: str, argument: str, result: str) -> dict:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": argument}}}
    return {"tools": WEATHER_CONVERSATION["tools"], "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "reasoning_content": reasoning, "tool_calls": [call]},
        {"role": "tool", "content": result},
        {"role": "assistant", "content": "done", "reasoning_content": "ok"},
    ]}


@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.tuples(_forged, _forged, _forged))
def test_forged_control_text_never_moves_a_span(encoders, model, texts):
    encoder = encoders[model]
    try:
        text, spans = encoder.prepare(_conversation(*texts))
    except Skip as skip:  # a template whose output depends on control text is refused, never guessed
        assert skip.reason == "template_error"
        return
    plain, plain_spans = encoder.prepare(_conversation(*map(_neutral, texts)))
    assert len(text) == len(plain) and spans == plain_spans


def test_a_build_records_what_went_through_the_template_and_what_was_not_written(tmp_path, capsys):
    from sftpack.cli import main

    template = official_template("gemma4.jinja")  # the launch template writes no reasoning
    directory = save_template_stand_in_dir(tmp_path / "tok", template, "<turn|>", "<bos>")
    source = tmp_path / "tools.jsonl"
    plain = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}
    source.write_text("".join(json.dumps({"id": f"c{k}", **(WEATHER_CONVERSATION if k % 2 else plain)}) + "\n"
                              for k in range(40)))
    out = tmp_path / "out"
    assert main(["build", "--model", "Gemma-4-31B", "--tokenizer", str(directory), "--source", str(source), "--rows",
                 "2", "--row-tokens", "256", "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    import yaml

    counts = yaml.safe_load(next(out.glob("*.build.yaml")).read_text())["counts"]
    # every tool conversation went through the template, and its reasoning is counted: the template writes none
    assert counts["skipped"] == {}
    assert counts["conversations_through_template"] == counts["unrendered_fields"]["reasoning_content"] > 0
    assert counts["conversations_through_template"] < counts["conversations_packed"]


def test_a_rule_inferred_from_text_alone_is_not_trusted_with_tool_conversations(tmp_path):
    """GLM-5.2's rule is inferred at build from the checkpoint's template (here GLM-4.7-Flash's, which miles runs it
    with): from text conversations the inference cannot know that <|observation|> closes a turn calling a tool, so its
    spans would run over the tool result. The build checks the rule on tool conversations first: they are skipped,
    named, and text conversations build as before."""
    directory = save_stand_in_dir("glm4_7_flash", tmp_path / "tok", official_template("glm4_7_flash.jinja"))
    profile = load_profile("GLM-5.2-744B-A40B")
    encoder = make_encoder(profile, load_vocab(profile, str(directory), allow_unpinned=True))
    assert "<|observation|>" not in encoder.rule.end_markers and encoder.routing.refused
    with pytest.raises(Skip) as info:
        encoder.prepare(WEATHER_CONVERSATION)
    assert info.value.reason == "template_error" and "closes a turn calling a tool" in info.value.detail
    text, spans = encoder.prepare([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo",
                                                                        "reasoning_content": "short"}])
    assert [text[a:b] for a, b in spans] == ["short</think>Yo<|user|>"]
