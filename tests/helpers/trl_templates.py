"""Official chat templates from TRL's package, for a clone without ../shared.

TRL ships the templates it trains with under ``trl/chat_templates/``; four of them are byte for byte the official
templates the fixtures in ../shared/fixtures/templates hold, and some official ones have no fixture (Qwen3.6's,
Qwen3.8's). A test reads one from there only when its sha256 is the one written below (the fixture's, or TRL
1.16.0's file), so the test runs on the very same bytes. TRL is located
without being imported (importing it would import torch). Install it with ``pip install ".[trainers]"``.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

# fixture file name -> (file in trl/chat_templates/, sha256 of the fixture file)
TRL_FILES = {
    "qwen3_5.jinja": ("qwen3_5_think.jinja", "a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715"),
    "gpt_oss.jinja": ("gptoss.jinja", "a4c9919cbbd4acdd51ccffe22da049264b1b73e59055fa58811a99efbd7c8146"),
    "nemotron3_nano.jinja": ("nemotron_3_nano.jinja", "ab7813c3abdd9cb655905a410728b26c7884eca45ddfab8d9f931553485a7862"),
    "nemotron3_super.jinja": ("nemotron_3_super.jinja",
                              "575fb74f54ed264df9047d0ecce3c98938aae953fb4f50356675706264cbb68a"),
    # official templates no fixture holds (TRL: "as shipped by Qwen/Qwen3.8-27B", Qwen/Qwen3.6-27B)
    "qwen3_8.jinja": ("qwen3_8.jinja", "c3cf9e34abf4f9e36c2d72165aa9c132d3e2a725b6c2586aaa3a8af9d7a81041"),
    "qwen3_8_training.jinja": ("qwen3_8_training.jinja",
                               "320c2f734288f91c341c1c3c9690e4e6aba07a27852bf88d7c8481c880168288"),
    "qwen3_6.jinja": ("qwen3_6.jinja", "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259"),
    # as shipped by LiquidAI/LFM2.5-230M (with its own {% generation %} markers) and nvidia/NVIDIA-Nemotron-3-Ultra-*
    "lfm2_2_5.jinja": ("lfm2_2_5.jinja", "6d65c8804847ad74eea912dd7eca3dc1cf7a457b53a77f47d841a14121910963"),
    "nemotron3_ultra.jinja": ("nemotron_3_ultra.jinja", "82753bef5cedc4932c1ed509b5c9a12be680fd86d1adb65bc3f7398d11c8eebc"),
    # TRL's {% generation %} twins of the official Nemotron-3-Nano and GLM-4.5 (glm4moe) templates
    "nemotron3_nano_training.jinja": ("nemotron_3_nano_training.jinja",
                                      "f52a4a70292b98db4d1b9f69a59546a43fc5e8603a6794781973a3e5821bd475"),
    "glm4_5_training.jinja": ("glm4moe_training.jinja", "79c2386fbe44c9881be09b2dd086e0799b15447f8d530c45041152b6da9f3704"),
    # the official Qwen3.5 template with {% generation %} around assistant output and every think block kept
    "qwen3_5_training.jinja": ("qwen3_5_think_training.jinja",
                               "ccf356d8f238e287c047b1ef589850fd6b2b44e6cb29079e26c635fb9b8111ef"),
}


def trl_template_dir() -> Path | None:
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "chat_templates"


def trl_template(name: str) -> tuple[str | None, str]:
    """``(text, "")`` of fixture ``name`` read from TRL, or ``(None, why not)``."""
    if name not in TRL_FILES:
        return None, f"TRL ships no copy of {name}"
    directory = trl_template_dir()
    if directory is None:
        return None, "TRL is not installed (pip install '.[trainers]')"
    trl_name, expected = TRL_FILES[name]
    path = directory / trl_name
    if not path.is_file():
        return None, f"{path} is absent from this TRL"
    content = path.read_bytes()
    actual = hashlib.sha256(content).hexdigest()
    if actual != expected:
        return None, f"{path} has sha256 {actual}, not the fixture's {expected}"
    return content.decode("utf-8"), ""
