"""The official chat templates and recipes in ../shared (a test that needs one skips cleanly without it) and a
Jinja reference renderer that behaves like transformers' ``apply_chat_template``."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import SHARED
from helpers.trl_templates import trl_template

TEMPLATES = SHARED / "fixtures" / "templates"


def shared_file(*parts: str) -> Path:
    """A file under ../shared, or skip the test with a clear reason (a user's fresh clone has no ../shared)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared is only beside the project in CI and dev sessions)")
    return path



def official_template(name: str) -> str:
    """The official template ``name`` from ../shared, else TRL's byte-identical copy (sha256-checked), else skip."""
    path = TEMPLATES / name
    if path.exists():
        return path.read_text(encoding="utf-8")
    text, why_not = trl_template(name)
    if text is None:
        pytest.skip(f"{path} is absent (../shared is only beside the project in CI and dev sessions) and {why_not}")
    return text



def jinja_render(template: str, messages: list, **kwargs) -> str:
    """Render like transformers' ``apply_chat_template(..., tokenize=False)``: same Jinja environment."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    kwargs.setdefault("add_generation_prompt", False)
    return _compile_jinja_template(template).render(messages=messages, **kwargs)
