"""Every shipped profile names the model's own chat template it was proven against (its sha256), or says why no
copy is here. Each named template is found by its sha256 (../shared's fixtures, or TRL's wheel) and rendered through
transformers on the proof's battery - the bundled sample's first conversations, the edge cases and every family's
forged control text - against the profile's offline path: the native renderer with the profile's template options
(or, for a profile without one, the template itself); the profile's rule is proved on it."""

from __future__ import annotations

import hashlib

import pytest

from helpers import SHARED
from helpers.shared import jinja_render
from helpers.trl_templates import trl_template_dir
from sftpack.families.renderer_choice import template_variables
from sftpack.families.proof import battery, prove
from sftpack.families.infer import TemplateRunner
from sftpack.families.profiles import list_profiles, load_profile
from sftpack.families.render import TemplateError

BOS = {"gemma4": "<bos>"}  # the one family whose template writes bos_token


def templates_here() -> dict[str, str]:
    """sha256 -> text of every template in ../shared's fixtures and TRL's chat_templates."""
    directories = [SHARED / "fixtures" / "templates", trl_template_dir()]
    found = {}
    for directory in directories:
        if directory is None or not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.jinja")):
            text = path.read_bytes()
            found.setdefault(hashlib.sha256(text).hexdigest(), text.decode("utf-8"))
    return found


class _Vocab:  # what template_variables reads of a vocabulary
    def __init__(self, profile):
        self.eos_token, self.bos_token = profile.eos_token, BOS.get(profile.template)


def test_every_profile_names_its_template_or_says_why_not():
    for model in list_profiles():
        profile = load_profile(model)
        assert bool(profile.template_sha256) != bool(profile.template_unavailable), model


def test_a_profile_without_its_template_says_so_in_its_offline_build(offline_qwen):
    from sftpack.families.renderer_choice import choose_renderer
    from sftpack.tokenizers.loading import load_vocab

    profile = load_profile("DeepSeek-V4-Flash")
    _, description = choose_renderer(profile, load_vocab(profile, None), profile.rule)
    assert "unproven: DeepSeek-V4 ships no Jinja chat template" in description
    profile = load_profile("Qwen3.8-27B")
    _, description = choose_renderer(profile, offline_qwen, profile.rule)
    assert "unproven" not in description


@pytest.mark.parametrize("model", [m for m in list_profiles() if load_profile(m).template_sha256])
def test_the_profile_renders_its_own_template_on_the_battery(model):
    profile = load_profile(model)
    template = templates_here().get(profile.template_sha256)
    if template is None:
        pytest.skip(f"no template with sha256 {profile.template_sha256} here (../shared or TRL's wheel)")
    variables = template_variables(profile, _Vocab(profile))
    conversations = battery(profile.rule)
    native = profile.family.renderer(profile.template_options)
    if native is not None:
        for name, messages in conversations:
            try:
                ours = native(messages).text
            except TemplateError:
                ours = None
            try:
                theirs = jinja_render(template, messages, **variables)
            except Exception:  # the template raises: so must the renderer
                theirs = None
            assert ours == theirs, f"{model}: {name}"
    report = prove(TemplateRunner(template, variables), profile.rule, conversations)
    assert report.conversations >= 64, report.line()
