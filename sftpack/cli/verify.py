"""``sftpack verify``: rows, given or rebuilt, against what a recipe or build record declares."""

from __future__ import annotations

import json

from sftpack.base.errors import UsageError
from sftpack.builder.config import add_arguments


def add(sub):
    p = sub.add_parser("verify", help="check rows against a recipe or build record", description=(
        "Recompute every figure a recipe (OpenRecipes workload.dataset) or an sftpack build record declares and "
        "print field, declared, measured, OK/FAIL. Exit 0 all match, 1 any differs, 2 unusable input."))
    p.add_argument("recipe", metavar="RECIPE.yaml", help="OpenRecipes recipe or NAME.build.yaml")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--rows", metavar="ROWS.parquet", help="the rows parquet to check")
    what.add_argument("--rebuild", action="store_true", help="build the rows the recipe describes in a temporary "
                      "directory and check them (and the tokenizer files used)")
    add_arguments(p, ("model", "source", "tokenizer", "workers"), help_prefix="with --rebuild: ", defaults=False,
                  notes={"model": "default: the declared model; the profile file a build record keeps",
                         "source": "default: the declared source: hub for recipes", "workers": "default: all cores"})
    p.add_argument("--keep", metavar="DIR", help="with --rebuild: write the rebuilt rows to DIR instead of a temporary directory")
    p.add_argument("--against", metavar="OTHER.parquet", help="when rows_sha256 does not match, diff the rows with "
                   "OTHER.parquet (as `sftpack diff`): where they first differ and why")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    return p


def run(args) -> int:
    from sftpack.checks.rebuild import verify_rebuild
    from sftpack.checks.declared import load_declared
    from sftpack.checks.verify import format_report, report_json, rows_mismatch, verdict, verify_rows

    if not args.rebuild and (args.model or args.source or args.tokenizer or args.workers or args.keep):
        raise UsageError("--model, --source, --tokenizer, --workers and --keep go with --rebuild")
    declared = load_declared(args.recipe)
    diffs = []

    def against(rows_path, checks):  # runs while the rows exist (a rebuild's temporary directory is removed afterwards)
        from sftpack.checks.diff import diff_rows

        measured = next((c.measured for c in checks if c.field == "rows_sha256"), None)  # A is hashed already
        diffs.append(diff_rows(rows_path, args.against, rows_sha256={"A": measured} if measured else None))

    if args.against:
        from sftpack.rows.formats import open_rows_file

        open_rows_file(args.against)  # an unusable OTHER is exit 2 before any slow step
    if args.rebuild:
        checks = verify_rebuild(declared, args.source, args.tokenizer, args.workers, keep=args.keep,
                                on_mismatch=against if args.against else None, model=args.model)
        target = "rows rebuilt from it"
    else:
        checks = verify_rows(declared, args.rows)
        target = args.rows
        if args.against and rows_mismatch(checks):
            against(args.rows, checks)
    if args.json:
        report = report_json(declared, checks, target)
        if args.against:
            report["diff"] = diffs[0] if diffs else None
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_report(declared, checks, target))
        if args.against:
            from sftpack.checks.diff import format_diff

            print("\n" + (format_diff(diffs[0]) if diffs else f"--against {args.against}: not compared, rows_sha256 matches"))
    return verdict(checks)[0]
