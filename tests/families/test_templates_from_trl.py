"""Without ../shared the template tests read four official templates from TRL's package, and only the very bytes
of the fixtures (sha256 written down from the fixture files, compared with the fixtures when they are here)."""

from __future__ import annotations

import hashlib

import pytest

from helpers import SHARED, shared
from helpers.trl_templates import TRL_FILES, trl_template, trl_template_dir

pytestmark = pytest.mark.skipif(trl_template_dir() is None, reason="TRL is not installed (pip install '.[trainers]')")


@pytest.mark.parametrize("name", sorted(TRL_FILES))
def test_trl_ships_the_fixture_bytes(name):
    text, why_not = trl_template(name)
    assert text is not None, why_not
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == TRL_FILES[name][1]
    fixture = SHARED / "fixtures" / "templates" / name
    if fixture.exists():
        assert fixture.read_bytes() == text.encode("utf-8")


def test_official_template_falls_back_to_trl_without_shared(monkeypatch, tmp_path):
    monkeypatch.setattr(shared, "TEMPLATES", tmp_path / "no-shared")
    assert official_template_text("gpt_oss.jinja") == trl_template("gpt_oss.jinja")[0]
    with pytest.raises(pytest.skip.Exception, match="TRL ships no copy of gemma4.jinja"):
        shared.official_template("gemma4.jinja")


def test_a_trl_file_with_other_bytes_is_not_used(monkeypatch, tmp_path):
    (tmp_path / "chat_templates").mkdir()
    (tmp_path / "chat_templates" / "gptoss.jinja").write_text("{{ messages }}", encoding="utf-8")
    monkeypatch.setattr("helpers.trl_templates.trl_template_dir", lambda: tmp_path / "chat_templates")
    text, why_not = trl_template("gpt_oss.jinja")
    assert text is None and "not the fixture's" in why_not


def official_template_text(name: str) -> str:
    return shared.official_template(name)
