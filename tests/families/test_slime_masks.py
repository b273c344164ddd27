"""The Qwen families' masks on tool conversations against slime's own loss-mask generator (``MultiTurnLossMaskGenerator``,
slime's ``slime/utils/mask_utils.py``), an independent reference.

slime is not on PyPI, so its masks are recorded in ``data/slime_masks.json`` by ``tools/references/slime_masks.py``
(slime's commit, its generator types, the official templates through transformers) and compared here without it.
Where slime is at hand (``SLIME_MASK_UTILS=path/to/slime/utils/mask_utils.py`` or an installed slime), the live tests
run slime itself: the file must be what slime gives today, and sftpack must agree on slime's own tests' conversations.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import tempfile
from pathlib import Path

import pytest

from references.slime_masks import MODELS, conversations, entry, input_digest, record, slime_entry
from sftpack.families.encode import make_encoder
from sftpack.families.profiles import load_profile

FIXTURE = Path(__file__).parent / "data" / "slime_masks.json"
# What slime's "qwen3_5" generator searches the rendered text for: forged into a tool result, reasoning or an argument,
# "<|im_start|>assistant\n" opens a span inside the tool result and "<|im_end|>" closes the turn's span early.
SEARCHED = ("<|im_start|>assistant\n", "<|im_end|>")
# Conversations where slime's masks are expected to differ, and why: each is checked to differ, and to hold text slime
# searches for (the battery's forged variants, tests/helpers/tool_conversations.py, seed 11).
FORGED_SEARCH = {"forged-7": "<|im_end|> in reasoning: slime's span stops there",
                 "forged-26": "<|im_start|>assistant\\n in a tool result: slime supervises the result's tail",
                 "forged-37": "<|im_end|> in an argument and in reasoning: slime's spans stop there",
                 "forged-47": "<|im_end|> in reasoning: slime's span stops there",
                 "forged-55": "<|im_start|>assistant\\n in a tool result: slime supervises the result's tail"}
EXPECTED_DIFFERENT = {"Qwen3.5-122B-A10B": FORGED_SEARCH,
                      "Qwen3-30B-A3B": {},
                      # Qwen3.8 keeps every turn's reasoning, Qwen3.5 drops this earlier turn's
                      "Qwen3.8-27B": {**FORGED_SEARCH, "forged-54": "<|im_end|> in reasoning: slime's span stops there"}}
# slime's "qwen3" generator renders each message alone after a stand-in user message, so every assistant turn is
# written as a final turn after the last query (an empty think block, its reasoning kept): on conversations where the
# template writes an assistant turn otherwise, slime's token ids are not the template's (and not compared).
OWN_TEXT = {"Qwen3.5-122B-A10B": 0, "Qwen3-30B-A3B": 32, "Qwen3.8-27B": 0}


def _offline_vocab(model: str):
    from sftpack.tokenizers.offline import load_offline_qwen, load_offline_qwen3

    return load_offline_qwen3() if model.startswith("Qwen3-") else load_offline_qwen()


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def encoders() -> dict:
    return {model: make_encoder(load_profile(model), _offline_vocab(model)) for model in MODELS}


def test_the_fixture_is_of_the_battery_and_slime_at_a_commit(recorded):
    assert len(recorded["slime_commit"]) == 40 and set(recorded["models"]) == set(MODELS)
    for model, (kind, template, _) in MODELS.items():
        assert (recorded["models"][model]["generator"], recorded["models"][model]["template"]) == (kind, template)
        rows = recorded["models"][model]["conversations"]
        # a battery that changed needs the file made again: python tools/references/slime_masks.py --mask-utils ...
        assert {name: rows.get(name, {}).get("input_sha256") for name, _ in conversations()} == \
            {name: input_digest(c) for name, c in conversations()}, model


@pytest.mark.parametrize("model", MODELS)
def test_masks_equal_slimes_recorded_masks(model, recorded, encoders):
    rows = recorded["models"][model]["conversations"]
    agreed, own_text, different = 0, 0, {}
    for name, conversation in conversations():
        ours, slime = entry(*encoders[model](conversation)), rows[name]
        assert ours["ids_sha256"] == slime["template_ids_sha256"], name  # the template's tokens, through transformers
        if slime["ids_sha256"] != slime["template_ids_sha256"]:
            own_text += 1
        elif ours["supervised"] == slime["supervised"]:
            agreed += 1
        else:
            different[name] = (ours["supervised"], slime["supervised"])
    assert set(different) == set(EXPECTED_DIFFERENT[model])
    messages_text = {name: json.dumps(c, ensure_ascii=False) for name, c in conversations()}
    for name in different:
        assert any(json.dumps(s)[1:-1] in messages_text[name] for s in SEARCHED), name
    assert own_text == OWN_TEXT[model]
    assert agreed == len(conversations()) - own_text - len(different)


# ------------------------------------------------------------------------------------------ slime itself
def _slime_mask_utils() -> Path:
    path = os.environ.get("SLIME_MASK_UTILS")
    if path:
        return Path(path)
    spec = importlib.util.find_spec("slime.utils.mask_utils") if importlib.util.find_spec("slime") else None
    if spec is None:
        pytest.skip("slime is not installed (or set SLIME_MASK_UTILS to slime/utils/mask_utils.py)")
    return Path(spec.origin)


def test_the_fixture_is_what_slime_gives_today(recorded):
    path = _slime_mask_utils()
    today = record(path, recorded["slime_commit"])
    for model in MODELS:
        assert today["models"][model] == recorded["models"][model], (
            f"slime at {path} gives other masks for {model} than tests/families/data/slime_masks.json (slime "
            f"{recorded['slime_commit']}): make the file again with tools/references/slime_masks.py")


def slimes_own_conversations(checkout: Path) -> list[tuple[str, dict]]:
    """The ``messages`` (and ``tools``) literals of slime's own mask tests, read from its checkout's tests/utils."""
    out = []
    for path in sorted((checkout / "tests" / "utils").glob("test_*mask*.py")):
        for function in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(function, ast.FunctionDef):
                continue
            found = {target.id: ast.literal_eval(node.value) for node in ast.walk(function)
                     if isinstance(node, ast.Assign) for target in node.targets
                     if isinstance(target, ast.Name) and target.id in ("messages", "tools")}
            if "messages" in found:
                out.append((f"{path.stem}::{function.name}", {"messages": found["messages"],
                                                              "tools": found.get("tools")}))
    return out


@pytest.mark.parametrize("model", MODELS)
def test_masks_equal_slimes_on_its_own_tests_conversations(model, encoders):
    """slime's own test conversations (tool calls, consecutive tool results, reasoning in content), run through
    slime's generator with the official template: where slime writes the template's tokens, the masks are equal."""
    from references.slime_masks import hf_tokenizer, load_mask_utils

    path = _slime_mask_utils()
    checkout = path.resolve().parents[2]
    own = slimes_own_conversations(checkout)
    if not own:
        pytest.skip(f"no slime tests beside {path} ({checkout / 'tests' / 'utils'})")
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = hf_tokenizer(model, Path(tmp))
        generator = load_mask_utils(path).MultiTurnLossMaskGenerator(tokenizer, tokenizer_type=MODELS[model][0])
        compared, own_text = 0, 0
        for name, conversation in own:
            slime = slime_entry(generator, conversation)
            template_ids = tokenizer.apply_chat_template(conversation["messages"], tools=conversation["tools"],
                                                         tokenize=True, return_dict=False)
            ours = entry(*encoders[model](conversation))
            assert ours["ids_sha256"] == entry(template_ids, [])["ids_sha256"], name
            if slime["ids_sha256"] != ours["ids_sha256"]:
                own_text += 1  # slime's "qwen3" generator writes its own text (see OWN_TEXT)
                continue
            assert ours["supervised"] == slime["supervised"], name
            compared += 1
    # at slime 624b824a8: 6 of 6 for Qwen3.5 and Qwen3.8; 2 of 6 for Qwen3, the others written otherwise by slime
    assert own_text == 0 if MODELS[model][0] == "qwen3_5" else compared >= 2
