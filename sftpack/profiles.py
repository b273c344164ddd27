"""Model profiles (``configs/*.yaml``) and loss-mask rules (``masks/*.yaml``), shipped inside the wheel.

    >>> p = load_profile("Qwen3.5-122B-A10B")
    >>> p.build_name, p.loss_mask, p.eos_token
    ('qwen35-tulu3-fixed8192-v1', 'qwen3_5', '<|im_end|>')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from .errors import UsageError

TULU_REPO = "allenai/tulu-3-sft-mixture"
TULU_REVISION = "b14afda60f1bbebe55d5d2fa1e4df5042f97f8be"


def resource_dir(name: str) -> Path:
    """``masks`` or ``configs``: inside the installed package, else at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / name, here.parent / name):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    raise FileNotFoundError(f"sftpack's {name}/ directory is missing from this installation")


@dataclass(frozen=True)
class MaskRule:
    """A declarative loss-mask rule; see ``masks/qwen3_5.yaml``."""

    name: str
    role: str
    header: str
    skip_after_header: str
    end_of_turn: str
    after_end_of_turn: str
    example: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Profile:
    model: str
    hub_repo: str
    hub_revision: str | None
    template: str
    loss_mask: str
    build_name: str
    tokenizer_format: str
    eos_token: str
    pins: dict
    offline_tokenizer: str | None
    defaults: dict
    published: dict
    path: Path

    @property
    def rule(self) -> MaskRule:
        return load_mask_rule(self.loss_mask)


@lru_cache(maxsize=None)
def load_mask_rule(name: str) -> MaskRule:
    path = resource_dir("masks") / f"{name}.yaml"
    if not path.exists():
        raise UsageError(f"unknown loss-mask rule {name!r} (known: {', '.join(list_mask_rules())})")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return MaskRule(
        name=data["name"],
        role=data["role"],
        header=data["header"],
        skip_after_header=data.get("skip_after_header") or "",
        end_of_turn=data["end_of_turn"],
        after_end_of_turn=data.get("after_end_of_turn") or "",
        example=data.get("example") or {},
    )


def list_mask_rules() -> list[str]:
    return sorted(p.stem for p in resource_dir("masks").glob("*.yaml"))


def list_profiles() -> list[str]:
    return sorted(p.stem for p in resource_dir("configs").glob("*.yaml"))


@lru_cache(maxsize=None)
def load_profile(model: str) -> Profile:
    """The profile of ``model`` (case-insensitive; ``Qwen/Qwen3.5-122B-A10B`` also works)."""
    wanted = model.rsplit("/", 1)[-1].lower()
    for name in list_profiles():
        if name.lower() == wanted:
            path = resource_dir("configs") / f"{name}.yaml"
            break
    else:
        raise UsageError(f"unknown model {model!r}; known models: {', '.join(list_profiles())} (see `sftpack models`)")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    tok = data["tokenizer"]
    return Profile(
        model=data["model"],
        hub_repo=data["hub"]["repo"],
        hub_revision=data["hub"].get("revision"),
        template=data["template"],
        loss_mask=data["loss_mask"],
        build_name=data["build_name"],
        tokenizer_format=tok["format"],
        eos_token=tok["eos_token"],
        pins=dict(tok.get("pins") or {}),
        offline_tokenizer=tok.get("offline"),
        defaults=dict(data.get("defaults") or {}),
        published=dict(data.get("published") or {}),
        path=path,
    )
