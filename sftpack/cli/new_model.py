"""``sftpack new-model``: a model profile - and a loss-mask rule when no shipped one fits - from a checkpoint's chat
template, proved before it is written.

The rule is inferred from probe renders of the template (:mod:`sftpack.families.infer`), proved on the battery
(:mod:`sftpack.families.proof`), and compared with the shipped rules: one that gives the same supervision on the
battery is reused. The family is a native renderer's when it reproduces the template on the probe conversations
(faster builds), else ``jinja`` (the template itself). The profile records the template's sha256.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from sftpack.base.errors import UsageError

CLOCK_DATE = "2025-08-05"  # a template that reads the clock (strftime_now) is pinned to this date


def add(sub):
    p = sub.add_parser("new-model", help="infer a profile and loss-mask rule from a checkpoint's chat template",
                       description=("Read the tokenizer files and chat template of DIR, infer the loss-mask rule from "
                                    "probe renders of the template, prove it on the bundled sample and generated edge "
                                    "cases, and write OUT/configs/MODEL.yaml (and OUT/masks/RULE.yaml when no shipped "
                                    "rule gives the same supervision). Build with --model OUT/configs/MODEL.yaml."))
    p.add_argument("--tokenizer", required=True, metavar="DIR", help="the checkpoint's tokenizer directory")
    p.add_argument("--name", required=True, metavar="MODEL", help="the model's name (the profile's file name)")
    p.add_argument("--out", default=".", metavar="DIR", help="where configs/ and masks/ are written (default: .)")
    p.add_argument("--rule", metavar="NAME", help="the rule's name (default: from the model's name)")
    p.add_argument("--hub", metavar="REPO", help="the hub repository (default: the tokenizer config's name_or_path)")
    p.add_argument("--date", default=CLOCK_DATE, metavar="YYYY-MM-DD",
                   help=f"the day a template that reads the clock is pinned to, written into the profile (default: {CLOCK_DATE})")
    p.add_argument("--template-option", action="append", default=[], metavar="KEY=VALUE", dest="template_options",
                   help="a variable the template is given (enable_thinking=false, reasoning_effort=low), written into "
                        "the profile and the build's name; repeatable")
    p.add_argument("--overwrite", action="store_true", help="replace existing profile and rule files")
    return p


def jinja_options(args, template: str) -> dict:
    """The template variables a new jinja profile pins: each ``--template-option`` (a YAML scalar), and ``date``
    when the template reads the clock."""
    from sftpack.base import safe_yaml
    from sftpack.families.jinja import clock_calls
    from sftpack.families.template_vars import check_date, clock_reads

    options = {}
    for item in args.template_options:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) or key == "date":
            raise UsageError(f"--template-option {item!r}: expected KEY=VALUE, KEY a template variable other than date "
                             "(--date pins the clock)")
        parsed = safe_yaml.load_text(value, f"--template-option {key}") if value else ""
        options[key] = parsed if isinstance(parsed, (str, bool, int, float)) else value
    if clock_reads(template) or clock_calls(template, {}):
        try:
            options["date"] = check_date(args.date)
        except ValueError as e:
            raise UsageError(f"--date: {e}") from None
    return options


@dataclass(frozen=True)
class Checkpoint:
    directory: Path
    template: str
    template_sha256: str
    bos_token: str | None
    eos_token: str
    special_tokens: tuple[str, ...]
    name_or_path: str | None


def read_checkpoint(directory: Path) -> Checkpoint:
    """The chat template, BOS/EOS and special tokens of a tokenizer directory; one line when something is missing."""
    from sftpack.tokenizers.loading import chat_template_of, read_tokenizer_config, token_text

    if not directory.is_dir():
        raise UsageError(f"--tokenizer {directory}: no such directory (a checkpoint's tokenizer directory: "
                         "tokenizer.json, tokenizer_config.json, chat_template.jinja)")
    config = read_tokenizer_config(directory)
    template, _ = chat_template_of(directory, config, {})
    if not template:
        raise UsageError(f"--tokenizer {directory}: no chat template (neither chat_template.jinja nor "
                         "tokenizer_config.json's chat_template)")
    eos = token_text(config.get("eos_token"))
    if not eos:
        raise UsageError(f"{directory / 'tokenizer_config.json'}: no eos_token (the token placed between conversations)")
    specials = dict.fromkeys(t["content"] for t in config.get("added_tokens_decoder", {}).values()
                             if isinstance(t, dict) and t.get("content"))
    tokenizer_json = directory / "tokenizer.json"
    if tokenizer_json.is_file():
        try:
            added = json.loads(tokenizer_json.read_text(encoding="utf-8")).get("added_tokens", [])
        except ValueError as e:
            raise UsageError(f"{tokenizer_json}: not valid JSON ({e})") from None
        specials.update(dict.fromkeys(t["content"] for t in added if isinstance(t, dict) and t.get("content")))
    return Checkpoint(directory, template, hashlib.sha256(template.encode("utf-8")).hexdigest(),
                      token_text(config.get("bos_token")), eos, tuple(t for t in specials if t.strip()),
                      config.get("name_or_path") or config.get("_name_or_path"))


def template_variables(checkpoint: Checkpoint, options: dict) -> dict:
    """What the template is given besides the messages: BOS, EOS and the profile's variables (its clock pinned)."""
    from sftpack.families.template_vars import jinja_variables

    variables = {"bos_token": checkpoint.bos_token, "eos_token": checkpoint.eos_token, **jinja_variables(options)}
    return {k: v for k, v in variables.items() if v is not None}


def native_family(checkpoint: Checkpoint, variables: dict) -> str | None:
    """The first native family whose renderer writes exactly what the template writes on the probe conversations
    and whose tokenizer format reads the directory (Kimi's needs its tiktoken.model)."""
    from sftpack.families.renderer_choice import reproduces
    from sftpack.families.infer import TemplateRunner
    from sftpack.families.registry import FAMILIES
    from sftpack.tokenizers.registry import get_tokenizer_format

    runner = TemplateRunner(checkpoint.template, variables)
    for name, family in FAMILIES.items():
        marker = get_tokenizer_format(family.tokenizer).marker
        if family.render is None or (marker and not (checkpoint.directory / marker).exists()):
            continue
        native = family.renderer(default_options(family))
        if reproduces(native, runner):
            return name
    return None


def check_written_markers(checkpoint: Checkpoint, rule) -> None:
    """Refuse a rule whose turn markers the tokenizer has no special token for: tokenized as text, they would be
    text any content can spell (and the build refuses such a tokenizer)."""
    from sftpack.families.jinja import MARKER

    pieces = (*rule.header.split("{name}"), *rule.end_markers, rule.final_turn_end)
    missing = sorted({m for piece in pieces for m in MARKER.findall(piece)} - set(checkpoint.special_tokens))
    if missing:
        raise UsageError(f"{checkpoint.directory}: the template marks turns with {', '.join(missing)}, which the "
                         "tokenizer has no special token for (tokenizer.json's added_tokens)")


def default_options(family) -> dict:
    """The template options ``new-model`` writes for a native family: each option's default."""
    return {name: option.default for name, option in family.options.items()}


def fitting_rule(rule, runner, conversations, special_tokens):
    """A shipped rule that supervises exactly what ``rule`` does on ``conversations`` (same spans), else ``rule``."""
    from sftpack.families.proof import same_supervision
    from sftpack.families.profiles import list_mask_rules, load_mask_rule

    example = rule.example["turn"]
    # the simplest first (fewest skipped texts): rules that differ only on turns this template never writes tie
    for shipped in sorted(map(load_mask_rule, list_mask_rules()), key=lambda r: (len(r.skips), r.name)):
        if dataclasses.replace(rule, name=shipped.name) == shipped:
            return shipped
        # only a rule whose markers the template writes can supervise the same (a cheap look before the battery)
        written = shipped.header.split("{name}")[0] in example and any(m in example for m in shipped.end_markers)
        if written and same_supervision(runner, rule, shipped, conversations, special_tokens):
            return shipped
    return rule


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "model"


def profile_yaml(args, checkpoint: Checkpoint, family: str, rule_name: str, proof: str, options: dict) -> str:
    """The profile; a jinja profile pins ``options`` (the template's variables), each but the date in its name."""
    hub = args.hub or checkpoint.name_or_path or args.name
    import textwrap

    from sftpack.families.registry import get_family

    if family != "jinja":
        options = default_options(get_family(family))
    named = "".join(f"-{_slug(k).replace('_', '')}{_slug(str(v).lower())}" for k, v in options.items() if k != "date")
    comment = (f"Model profile written by `sftpack new-model` from the chat template of {checkpoint.directory} (sha256 "
               f"{checkpoint.template_sha256}). Rule {rule_name}: {proof}. No vocabulary is offline: build with "
               f"--model configs/{args.name}.yaml --tokenizer DIR.")
    lines = [*("# " + line for line in textwrap.wrap(comment, 114, break_long_words=False, break_on_hyphens=False)),
        f"model: {json.dumps(args.name)}",
        "hub:",
        f"  repo: {json.dumps(hub)}",
        "  revision: null",
        f"template: {family}",
        f"loss_mask: {rule_name}",
        f"build_name: {_slug(args.name).replace('_', '-')}-tulu3-fixed8192-v1{named if family == 'jinja' else ''}",
        f"template_sha256: {checkpoint.template_sha256}",
        "tokenizer:",
        f"  eos_token: {json.dumps(checkpoint.eos_token, ensure_ascii=False)}",
        "  pins: {}",
        "  offline: null",
        "defaults: {rows: 6400, row_tokens: 8192, seed: 42}",
    ]
    if options:
        lines.append("template_options: {" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in options.items()) + "}")
    return "\n".join(lines) + "\n"


def _write_all(files: dict[Path, str], overwrite: bool) -> None:
    """Write every file or none: each checked first, then written beside its place and renamed into it."""
    import os

    for path in files:  # every path checked before any file is written
        if path.exists() and not path.is_file():
            raise UsageError(f"{path} exists and is not a file; remove it or choose another --out")
        blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        if blocking is not None:
            raise UsageError(f"{blocking} is not a directory, so {path} cannot be written; choose another --out")
        if path.exists() and not overwrite:
            raise UsageError(f"{path} exists (--overwrite to replace it)")
    temporaries = {}
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.tmp")
            temporary.write_text(text, encoding="utf-8")
            temporaries[path] = temporary
        for path, temporary in temporaries.items():
            os.replace(temporary, path)
    finally:
        for temporary in temporaries.values():
            temporary.unlink(missing_ok=True)


def _tool_lines(checkpoint: Checkpoint, rule, variables: dict) -> list[str]:
    """How the rule supervises reasoning, tool calls and tool results (:func:`sftpack.families.fields.describe_fields`)."""
    from sftpack.families.fields import describe_fields
    from sftpack.families.jinja import JinjaRenderer

    return describe_fields(JinjaRenderer(checkpoint.template, rule, variables, checkpoint.special_tokens))


def run(args) -> int:
    from sftpack.families.infer import TemplateRunner, infer_rule, rule_yaml
    from sftpack.families.proof import battery, prove

    checkpoint = read_checkpoint(Path(args.tokenizer))
    options = jinja_options(args, checkpoint.template)
    variables = template_variables(checkpoint, options)
    inferred = infer_rule(checkpoint.template, args.rule or _slug(args.name), variables)
    runner = TemplateRunner(checkpoint.template, variables)
    written = tuple(t for t in checkpoint.special_tokens if t in checkpoint.template)  # the template's own tokens
    conversations = battery(inferred.rule, written)
    report = prove(runner, inferred.rule, conversations, written, special_tokens=checkpoint.special_tokens)
    rule = fitting_rule(inferred.rule, runner, conversations, checkpoint.special_tokens)
    check_written_markers(checkpoint, inferred.rule)
    family = native_family(checkpoint, variables) or "jinja"
    out = Path(args.out)
    text = rule_yaml(inferred, f"the chat template of {args.name} (sha256 {checkpoint.template_sha256[:16]}...)", report.line())
    text += "".join(f"# {line}\n" for line in _tool_lines(checkpoint, rule, variables))
    print(text, end="")
    profile = out / "configs" / f"{args.name}.yaml"
    files = {profile: profile_yaml(args, checkpoint, family, rule.name, report.line(), options)}
    if rule is inferred.rule:
        files[out / "masks" / f"{rule.name}.yaml"] = text
    else:
        print(f"the shipped rule {rule.name} supervises exactly this on the {len(conversations)} battery conversations: reused")
    _write_all(files, args.overwrite)
    for path in reversed(list(files)):
        print(f"wrote {path}" + (f" (family {family}; {report.line()})" if path == profile else ""))
    print(f"build: sftpack build --model {profile} --tokenizer {args.tokenizer}")
    return 0
