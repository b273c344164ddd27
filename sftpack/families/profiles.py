"""Model profiles (``configs/*.yaml``) and loss-mask rules (``masks/*.yaml``), shipped inside the wheel.

Both are checked when loaded (:mod:`sftpack.families.schema`): a missing, misspelt or mistyped key, an unknown family,
rule or offline tokenizer is one line naming the file, the key and what is allowed.

    >>> p = load_profile("Qwen3.5-122B-A10B")
    >>> p.build_name, p.loss_mask, p.eos_token, p.tokenizer_format
    ('qwen35-tulu3-fixed8192-v1', 'qwen3_5', '<|im_end|>', 'tokenizer.json')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from sftpack.base.errors import UsageError
from sftpack.base.plain_names import plain_name_problem
from sftpack.base.refs import did_you_mean, resolve
from sftpack.families.family import TemplateOption
from sftpack.families.registry import FAMILIES, get_family, offline_tokenizer_names, offline_tokenizers
from sftpack.tokenizers.registry import OfflineTokenizer
from sftpack.families.template_vars import check_jinja_options
from sftpack.families.schema import Key, check, read_yaml

# The loss_mask of a profile whose rule is inferred from the tokenizer's chat template when it builds
# (sftpack.families.infer), and proved on it first (sftpack.families.proof): a model whose template is not public.
INFERRED = "inferred"


@lru_cache(maxsize=None)
def resource_dir(name: str) -> Path:
    """``masks`` or ``configs``: inside the installed package, else at the top of a source checkout (found once per
    process: looking takes 0.1 ms, and every load of a profile asks)."""
    package = Path(__file__).resolve().parents[1]  # sftpack/
    for candidate in (package / name, package.parent / name):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    raise FileNotFoundError(f"sftpack's {name}/ directory is missing from this installation")


@dataclass(frozen=True)
class MaskRule:
    """A declarative loss-mask rule; see ``masks/qwen3_5.yaml`` and docs/models.md, "Loss-mask rules"."""

    name: str
    role: str
    header: str
    # text after the header that the generation prompt holds: one, or several of which the longest that follows the
    # header is skipped (Nemotron's template writes <think></think> before an answer, <think>\n before reasoning)
    skip_after_header: str | tuple
    # one marker, or the markers one of which closes each turn (gpt-oss: <|end|>, <|return|>; GLM: the next role token)
    end_of_turn: str | tuple
    after_end_of_turn: str
    example: dict = field(default_factory=dict, compare=False)
    # Families whose template writes no end-of-turn token (GLM): ``final_turn_end`` is appended after a
    # conversation's final assistant turn, which the template leaves open (see masks/glm4_5.yaml).
    final_turn_end: str = ""
    path: Path | None = field(default=None, compare=False)  # the rule file (named in messages about it)

    # cached: the build reads them for every assistant turn (the values go in the instance's __dict__, which a
    # frozen dataclass's fields, equality and hash do not look at)
    @cached_property
    def end_markers(self) -> tuple[str, ...]:
        return (self.end_of_turn,) if isinstance(self.end_of_turn, str) else tuple(self.end_of_turn)

    @cached_property
    def end_tails(self) -> tuple[str, ...]:
        """Each end marker followed by the separator: what ends an assistant turn."""
        return tuple(end + self.after_end_of_turn for end in self.end_markers)

    @cached_property
    def header_parts(self) -> tuple[str, str] | None:
        """The header's text before and after ``{name}``; None for a header without it."""
        return tuple(self.header.split("{name}", 1)) if "{name}" in self.header else None

    @cached_property
    def skips(self) -> tuple[str, ...]:
        """The skipped texts, longest first."""
        skips = (self.skip_after_header,) if isinstance(self.skip_after_header, str) else self.skip_after_header
        return tuple(sorted((s for s in skips if s), key=len, reverse=True))

    @cached_property
    def markers(self) -> tuple[str, ...]:
        """The fixed texts the rule relies on (header pieces around ``{name}``, the skipped texts, the end
        markers): content holding one of them is counted as control text."""
        pieces = [*self.header.split("{name}"), *self.skips, *self.end_markers, self.final_turn_end]
        return tuple(dict.fromkeys(p for p in pieces if p.strip()))


RULE_KEYS = {
    "name": Key(str, "the rule's name, equal to the file name"),
    "role": Key(str, "the role whose turns are supervised", choices=("assistant",)),
    "header": Key(str, "the turn header; {name} may stand for a role name", nonempty=True),
    "skip_after_header": Key((str, list), "text after the header that is not supervised", default=""),  # or a list
    "end_of_turn": Key((str, list), "the end-of-turn marker", nonempty=True),  # or a list: one of them closes each turn
    "after_end_of_turn": Key(str, "the separator written after the marker", default=""),
    "example": Key(dict, "{turn, supervised_chars}", default={}, keys={
        "turn": Key(str, "a rendered turn"), "supervised_chars": Key(str, "its supervised characters")}),
    "final_turn_end": Key(str, "text appended after a final assistant turn the template leaves open", default=""),
}

TOKENIZER_KEYS = {
    "eos_token": Key(str, "the EOS token placed between conversations", nonempty=True),
    "pins": Key(dict, "{file: sha256} of the hub files", default={}, values=str),
    "offline": Key(str, "a vocabulary available without the hub", default=None, choices=offline_tokenizer_names),
    # what refuses another model's tokenizer for a profile without pins: its EOS and turn markers
    "ids": Key(dict, "{special token: id} the model's tokenizer has", default={}, values=int),
}

PROFILE_KEYS = {
    "model": Key(str, "the model's name", nonempty=True),
    "hub": Key(dict, "{repo, revision}", keys={
        "repo": Key(str, "the hub repository", nonempty=True),
        "revision": Key(str, "the pinned commit (null: not pinned)", default=None)}),
    "template": Key(str, "the template family", choices=lambda: sorted(FAMILIES)),
    "loss_mask": Key(str, "the loss-mask rule (masks/RULE.yaml; default: the family's name), or inferred: from the "
                          "tokenizer's chat template when it builds", default=None),
    "build_name": Key(str, "the output name", nonempty=True),
    # A dict, or the name of another profile whose tokenizer block this one shares.
    "tokenizer": Key((dict, str), "the tokenizer block, or the profile whose block is shared", keys=TOKENIZER_KEYS),
    "defaults": Key(dict, "build defaults", default={}, keys={
        "rows": Key(int, "rows", default=None), "row_tokens": Key(int, "tokens per row", default=None),
        "seed": Key(int, "permutation seed", default=None)}),
    "published": Key(dict, "the published recipe's figures (free form)", default={}),
    "template_options": Key(dict, "what the family's renderer takes (gpt_oss: the pinned date, YYYY-MM-DD), or a jinja "
                                  "profile's template variables (date: the template's clock pinned)", default={},
                            values=(str, bool, int, float)),
    "template_sha256": Key(str, "sha256 of the model's chat template its renderer and rule were proven against",
                           default=None),
    "template_unavailable": Key(str, "why no copy of the model's chat template was here to prove it against",
                                default=None),
}


@dataclass(frozen=True)
class Profile:
    model: str
    hub_repo: str
    hub_revision: str | None
    template: str
    loss_mask: str
    build_name: str
    eos_token: str
    pins: dict
    offline_tokenizer: str | None
    defaults: dict
    published: dict
    path: Path
    template_options: dict = field(default_factory=dict)  # bound to the native renderer; shown in the build record
    token_ids: dict = field(default_factory=dict)  # special token -> id that the model's tokenizer has
    template_sha256: str | None = None  # the model's template its renderer and rule were proven against
    template_unavailable: str | None = None  # or why there was none to prove them against

    @property
    def rule(self) -> MaskRule:
        return load_mask_rule(self.loss_mask, self.path.parent.parent / "masks")

    @property
    def family(self):
        return get_family(self.template)

    @property
    def tokenizer_format(self) -> str:
        return self.family.tokenizer

    @property
    def offline(self) -> OfflineTokenizer | None:
        """The vocabulary to use without the hub: the one a family declares under the name ``tokenizer.offline``."""
        return None if self.offline_tokenizer is None else offline_tokenizers()[self.offline_tokenizer]

    @property
    def informational_files(self) -> tuple[str, ...]:
        return self.family.informational_files


def _rule_path(name: str, local: Path | None) -> Path | None:
    for directory in ([local] if local is not None else []) + [resource_dir("masks")]:
        path = directory / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def load_mask_rule(name: str, local: Path | None = None) -> MaskRule:
    """The rule ``masks/NAME.yaml``; ``local``: a ``masks`` directory searched first (beside a profile file)."""
    path = _rule_path(name, local)
    if path is None:
        raise UsageError(f"unknown loss-mask rule {name!r} (known: {', '.join(list_mask_rules())})")
    return _load_rule_file(path)


def _packaged(path: Path, kind: str) -> bool:
    """Whether ``path`` is one of sftpack's own files (``configs`` or ``masks``), which a process reads once; a file of
    the user's is parsed again whenever its bytes change (:func:`_as_it_reads`), so that a build never uses an edited
    file's earlier contents."""
    return path.parent == resource_dir(kind)


# a file of the user's -> (the files its load read, with their bytes; what it gave): parsing a profile and its rule
# takes 5 ms, comparing their bytes 0.05 ms (encode_conversation looks the profile up for every conversation)
_USER_FILES: dict[Path, tuple[tuple[tuple[Path, bytes], ...], object]] = {}


def _as_it_reads(path: Path, load):
    """``load(path)``'s ``(value, the files it read)``'s value, made again only when one of those files' bytes changed."""
    kept = _USER_FILES.get(path)
    if kept is not None and all(_bytes(file) == data for file, data in kept[0]):
        return kept[1]
    value, files = load(path)
    _USER_FILES[path] = (tuple((file, _bytes(file)) for file in files), value)
    return value


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _load_rule_file(path: Path) -> MaskRule:
    if _packaged(path, "masks"):
        return _load_packaged_rule(path)
    return _as_it_reads(path, lambda p: (_read_rule_file(p), [p]))


def _read_rule_file(path: Path) -> MaskRule:
    data = check(read_yaml(path), RULE_KEYS, path)
    for key in ("end_of_turn", "skip_after_header"):
        if isinstance(data[key], list):
            if not all(isinstance(m, str) and m for m in data[key]):
                raise UsageError(f"{path}: key '{key}': every text of the list must be a non-empty string")
            data[key] = tuple(data[key])
    if data["name"] != path.stem:
        raise UsageError(f"{path}: key 'name': {data['name']!r} differs from the file name (allowed: {path.stem!r})")
    return MaskRule(**data, path=path)


_load_packaged_rule = lru_cache(maxsize=None)(_read_rule_file)


def list_mask_rules() -> list[str]:
    return sorted(p.stem for p in resource_dir("masks").glob("*.yaml"))


def list_profiles() -> list[str]:
    return sorted(p.stem for p in resource_dir("configs").glob("*.yaml"))


def _profile_path(model: str) -> Path:
    if model.endswith((".yaml", ".yml")) and Path(model).is_file():  # a profile outside the package
        return Path(model).resolve()
    found = _named_profile(model.rsplit("/", 1)[-1].lower())
    if found is not None:
        return found
    known = list_profiles()  # whole, never cut: the error line is kept short enough for it
    raise UsageError(f"unknown model {model!r}{did_you_mean(model, known)} (known: {', '.join(known)}; or a profile "
                     "file PATH.yaml)", whole=True)


@lru_cache(maxsize=None)
def _named_profile(wanted: str) -> Path | None:
    """The path of sftpack's own profile named ``wanted`` (lower case), if there is one (the package's files do not
    change while it runs: looking through them takes 0.3 ms)."""
    for name in list_profiles():
        if name.lower() == wanted:
            return resource_dir("configs") / f"{name}.yaml"
    return None


def users_own(profile: Profile) -> bool:
    """Whether ``profile`` is a file of the user's rather than one of sftpack's own."""
    return not _packaged(profile.path, "configs")


def load_profile(model: str) -> Profile:
    """The profile of ``model`` (case-insensitive; ``Qwen/Qwen3.5-122B-A10B`` also works), or of a profile
    file ``PATH.yaml`` (its rule is looked for in ``../masks/`` beside it first)."""
    if not isinstance(model, str):
        raise UsageError(f"model must be a profile name (a string), not {type(model).__name__}")
    path = _profile_path(model)
    if _packaged(path, "configs"):
        return _load_packaged_profile(path)
    return _as_it_reads(path, _read_profile_files)


def _read_profile_files(path: Path) -> tuple[Profile, list[Path]]:
    """The profile, and the files it was read from: its own and those whose tokenizer block it shares."""
    shared = []
    return _read_profile(path, shared), [path, *shared]


def _read_profile(path: Path, shared: list | None = None) -> Profile:
    data = check(read_yaml(path), PROFILE_KEYS, path)
    problem = plain_name_problem(data["build_name"], f"{path}: key 'build_name'")  # it names the files, as --name
    if problem:
        raise UsageError(problem)
    tok, seen = data["tokenizer"], [path.stem]
    while isinstance(tok, str):  # "the same tokenizer as profile X", stated once in X
        if tok in seen:
            raise UsageError(f"{path}: key 'tokenizer': profiles {' -> '.join(seen + [tok])} share in a circle")
        seen.append(tok)
        shared_path = path.parent / f"{tok}.yaml"
        if shared is not None:
            shared.append(shared_path)
        if not shared_path.is_file():
            others = sorted(q.stem for q in path.parent.glob("*.yaml") if q != path)
            raise UsageError(f"{path}: key 'tokenizer': unknown profile {tok!r} (allowed: a block, or one of "
                             f"{', '.join(others)})")
        tok = check(read_yaml(shared_path), PROFILE_KEYS, shared_path)["tokenizer"]
    if data["loss_mask"] is None:
        data["loss_mask"] = data["template"]
    family = get_family(data["template"])
    if data["loss_mask"] != INFERRED:
        rule = _rule_path(data["loss_mask"], path.parent.parent / "masks")
        if rule is None:
            raise UsageError(f"{path}: key 'loss_mask': unknown rule {data['loss_mask']!r} "
                             f"(allowed: {', '.join(list_mask_rules())}, {INFERRED})")
        _load_rule_file(rule)  # a broken rule fails with the profile, naming the rule file
    if family.render is None:  # the checkpoint's own template: its variables, whatever it reads
        options = check_jinja_options(data["template_options"], path)
    else:
        options = _check_template_options(data["template_options"], family.options, path)
    return Profile(
        model=data["model"],
        hub_repo=data["hub"]["repo"],
        hub_revision=data["hub"]["revision"],
        template=data["template"],
        loss_mask=data["loss_mask"],
        build_name=data["build_name"],
        eos_token=tok["eos_token"],
        pins=dict(tok["pins"]),
        offline_tokenizer=tok["offline"],
        defaults={k: v for k, v in data["defaults"].items() if v is not None},
        published=dict(data["published"]),
        path=path,
        template_options=options,
        token_ids=dict(tok["ids"]),
        template_sha256=data["template_sha256"],
        template_unavailable=data["template_unavailable"],
    )


_load_packaged_profile = lru_cache(maxsize=None)(_read_profile)


def _check_template_options(options: dict, allowed: dict[str, TemplateOption], path: Path) -> dict:
    """A family's renderer options: exactly the ones it takes, each checked by its family (gpt_oss: ``date``,
    which it must be given: the template reads the clock, the rows must not)."""
    for name in options:
        if name not in allowed:
            raise UsageError(f"{path}: unknown key 'template_options.{name}' (allowed: {', '.join(allowed) or 'none for this family'})")
    for name in allowed:
        if name not in options:
            raise UsageError(f"{path}: key 'template_options.{name}' is missing (the renderer needs it)")
    for name, option in allowed.items():  # the renderer's own check, named as the profile's key here
        try:
            resolve(option.check)(options[name])
        except ValueError:
            raise UsageError(f"{path}: key 'template_options.{name}': expected {option.expected}, "
                             f"got {options[name]!r}") from None
    return dict(options)
