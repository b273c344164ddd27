"""`sftpack new-model` probes reasoning, tool calls and tool results too: its printed rule says which message fields
the template writes and what of a tool conversation is supervised, and warns where a tool result would be."""

from __future__ import annotations

import pytest

from helpers.family_vocabs import save_template_stand_in_dir
from helpers.shared import official_template
from sftpack.cli import main

# fixture -> (EOS, the supervised turn that calls the tool, written out by hand from the template's render)
CASES = {
    "qwen3_5.jinja": ("<|im_end|>", "I should call the tool.\\n</think>\\n\\n<tool_call>\\n<function=get_weather>\\n"
                                    "<parameter=city>\\nParis\\n</parameter>\\n</function>\\n</tool_call><|im_end|>\\n"),
    "glm4_5.jinja": ("<|endoftext|>", "\\n<think>I should call the tool.</think>\\n<tool_call>get_weather\\n"
                                      "<arg_key>city</arg_key>\\n<arg_value>Paris</arg_value>\\n</tool_call><|observation|>"),
}


@pytest.mark.parametrize("file", CASES)
def test_the_printed_rule_says_how_tool_calls_and_reasoning_are_supervised(file, tmp_path, capsys):
    eos, turn = CASES[file]
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", official_template(file), eos)
    assert main(["new-model", "--tokenizer", str(directory), "--name", "New-Model", "--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "# message fields the template writes: reasoning_content, tool_calls, tool_results, tools" in out
    assert "# and writes nothing of (counted as unrendered_fields): " in out and "tool_call_id" in out
    assert f"# supervised, turn 1 of a tool conversation: '{turn}'" in out
    assert "# tool results, the tools block, system and user text: never supervised" in out


def test_a_rule_that_would_supervise_a_tool_result_is_flagged():
    """GLM's rule inferred from text conversations alone ends a turn at the next user or assistant token; on a tool
    conversation its span would run over the tool result to the next assistant turn: the description says so (the
    shipped glm4_5 rule, which new-model reuses, ends such a turn at <|observation|>)."""
    from sftpack.families.fields import describe_fields
    from sftpack.families.infer import infer_rule
    from sftpack.families.jinja import JinjaRenderer
    from sftpack.families.profiles import load_mask_rule

    template = official_template("glm4_5.jinja")
    inferred = infer_rule(template, "glmlike").rule
    assert "<|observation|>" not in inferred.end_markers
    assert any(line.startswith("WARNING: the tool result") for line in describe_fields(JinjaRenderer(template, inferred, {})))
    shipped = describe_fields(JinjaRenderer(template, load_mask_rule("glm4_5"), {}))
    assert not any(line.startswith("WARNING") for line in shipped)
