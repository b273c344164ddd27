"""Masks on tool conversations against TRL's ``{% generation %}`` twins of the official templates
(``return_assistant_tokens_mask``): Qwen3.5, and Nemotron-3 and GLM-4.5 through their templates. slime's own
loss-mask generator is the other reference (test_slime_masks.py)."""

from __future__ import annotations

import pytest

from helpers.qwen_reference import build_qwen_tokenizer_dir
from helpers.shared import official_template
from helpers.tool_conversations import BATTERY, forged_conversations, template_form
from sftpack.families.encode import make_encoder
from sftpack.families.profiles import load_profile

CONVERSATIONS = BATTERY + [(f"forged-{k}", c) for k, c in enumerate(forged_conversations(60, seed=11))]


@pytest.fixture(scope="module")
def hf_qwen35(tmp_path_factory):
    from transformers import AutoTokenizer

    directory = build_qwen_tokenizer_dir(tmp_path_factory.mktemp("qwen35"), official_template("qwen3_5.jinja"))
    return AutoTokenizer.from_pretrained(str(directory))


@pytest.fixture(scope="module")
def encoder(offline_qwen):
    return make_encoder(load_profile("Qwen3.5-122B-A10B"), offline_qwen)


def _without_prompt_think(tokenizer, ids: list, mask: list) -> list:
    """``mask`` with the generation prompt's ``<think>\\n`` left out at the start of each supervised run (the twin
    marks a turn from ``<think>``; the prompt already holds it, so sftpack's rule skips it)."""
    mask = list(mask)
    for k in range(len(ids)):
        if mask[k] and (k == 0 or not mask[k - 1]):
            text, j = "", k
            while j < len(ids) and mask[j] and "<think>\n".startswith(text + tokenizer.decode([ids[j]])):
                text += tokenizer.decode([ids[j]])
                mask[j] = 0
                j += 1
    return mask


def test_masks_equal_trls_generation_twin(encoder, hf_qwen35):
    twin = official_template("qwen3_5_training.jinja")
    compared = 0
    for name, conversation in CONVERSATIONS:
        messages, tools = template_form(conversation["messages"]), conversation["tools"]
        official = hf_qwen35.apply_chat_template(messages, tools=tools, tokenize=False)
        if hf_qwen35.apply_chat_template(messages, tools=tools, chat_template=twin, tokenize=False) != official:
            continue  # the twin keeps every think block: it writes another text where the template drops one
        out = hf_qwen35.apply_chat_template(messages, tools=tools, chat_template=twin, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        ids, mask = encoder(conversation)
        assert ids.tolist() == out["input_ids"], name
        assert mask.tolist() == _without_prompt_think(hf_qwen35, out["input_ids"], out["assistant_masks"]), name
        compared += 1
    assert compared >= 40  # 49 of the 72: the others have an earlier turn whose think block the template drops


# model -> (its family's stand-in tokenizer, TRL's twin of its official template)
TWINS = {"Nemotron-3-Nano-30B-A3B": ("nemotron3_nano", "nemotron3_nano_training.jinja"),
         "GLM-4.5": ("glm4_5", "glm4_5_training.jinja")}


@pytest.mark.parametrize("model", TWINS)
def test_tool_conversations_through_the_template_agree_with_trls_twin(model, tmp_path):
    """Nemotron-3 and GLM-4.5 render tool conversations through their template: the masks are the twin's but for the
    generation prompt's ``<think>\\n`` (Nemotron), on every conversation whose text the twin writes too."""
    from transformers import AutoTokenizer

    from helpers.family_vocabs import save_stand_in_dir
    from sftpack.tokenizers.loading import load_vocab

    family, file = TWINS[model]
    twin = official_template(file)
    directory = save_stand_in_dir(family, tmp_path / "tok")
    profile = load_profile(model)
    encoder = make_encoder(profile, load_vocab(profile, str(directory), allow_unpinned=True))
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    compared = 0
    for name, conversation in CONVERSATIONS:
        ids, mask = encoder(conversation)
        out = tokenizer.apply_chat_template(template_form(conversation["messages"]), tools=conversation["tools"],
                                            chat_template=twin, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True)
        if out["input_ids"] != ids.tolist():
            continue  # GLM: sftpack's <|user|> after a final turn the template leaves open
        assert mask.tolist() == _without_prompt_think(tokenizer, out["input_ids"], out["assistant_masks"]), name
        compared += 1
    assert compared >= 40
