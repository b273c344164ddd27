"""``sftpack models``: the model profiles, as a table or JSON."""

from __future__ import annotations

import json


def add(sub):
    p = sub.add_parser("models", help="list the model profiles", description="List the model profiles sftpack knows.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def run(args) -> int:
    from sftpack.families.profiles import list_profiles, load_profile

    profiles = [load_profile(m) for m in list_profiles()]
    if args.json:
        print(json.dumps([{
            "model": p.model, "hub": p.hub_repo, "revision": p.hub_revision, "template": p.template,
            "loss_mask": p.loss_mask, "masked": masked(p), "offline_tokenizer": p.offline_tokenizer,
            "build_name": p.build_name, "eos_token": p.eos_token, "pins": p.pins,
            "template_sha256": p.template_sha256, "published_rows_sha256": p.published.get("rows_sha256"),
        } for p in profiles], indent=2))
        return 0
    # "offline": whether a build works without the hub and without --tokenizer (an offline vocabulary exists)
    rows = [(p.model, p.template, p.loss_mask, masked(p), "yes" if p.offline_tokenizer else "--tokenizer DIR",
             p.build_name, (p.hub_revision or "unpinned")[:12], (p.published.get("rows_sha256") or "-")[:16])
            for p in profiles]
    header = ("model", "family", "loss mask", "masked", "offline", "build name", "hub revision", "published rows_sha256")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        print(" ".join(cell.ljust(width) for cell, width in zip(row, widths)) + " " + row[-1])
    return 0


def masked(profile) -> str:
    """How a profile's turns are found and masked: its family's native renderer and rule, a rule inferred from the
    checkpoint's template (shipped, proved again at each build), or one inferred and proved when it builds."""
    from sftpack.families.profiles import INFERRED

    if profile.loss_mask == INFERRED:
        return "inferred at build"
    return "native" if profile.family.render is not None else "inferred"
