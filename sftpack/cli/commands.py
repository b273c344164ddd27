"""The subcommands: each one's arguments (``_add_NAME``) and what it runs (``cmd_NAME``); libraries load inside
the command, after the command line has installed its signal handlers."""

from __future__ import annotations

import json
import os
import signal
import sys

from sftpack.base.errors import UsageError
from sftpack.builder import interrupts
from sftpack.builder.config import add_arguments, from_arguments
from sftpack.cli.new_model import add_new_model


def _add_build(sub) -> None:
    p = sub.add_parser("build", help="build the packed rows of a model profile", description=(
        "Render, loss-mask and tokenize source conversations in a seeded global permutation, pack them into "
        "fixed-length rows and write OUT/NAME.parquet and OUT/NAME.build.yaml."))
    add_arguments(p)  # one declaration per option: sftpack.builder.config.BuildConfig
    p.set_defaults(func=cmd_build)


def cmd_build(args) -> int:
    from sftpack.builder.pipeline import build
    from sftpack.rows.formats import get_row_format

    config = from_arguments(args)
    record = build(config)
    print(summary(record, args.out, get_row_format(config.format).suffix))
    late = interrupts.late_signal()
    if late:
        print(f"sftpack: {signal.Signals(late).name} arrived after the outputs were in place: the build is complete",
              file=sys.stderr)
    return 0


def _path(record, which: str, out: str, suffix: str) -> str:
    """Where the build wrote a file (its record knows; one read back from YAML does not: OUT/NAME)."""
    paths = getattr(record, "paths", None)
    return str(getattr(paths, which)) if paths is not None else os.path.join(out, record.name + suffix)


def summary(record, out: str, suffix: str = ".parquet") -> str:
    """The one-screen summary printed after a build (of a :class:`~sftpack.builder.record.BuildRecord`)."""
    counts = record.counts
    skipped = counts.skipped
    lines = [
        f"built {record.rows} rows x {record.row_tokens} tokens  ({record.name}, loss mask {record.loss_mask})",
        f"  parquet       {_path(record, 'parquet', out, suffix)}  ({record.parquet_bytes:,} bytes)",
        f"  build record  {_path(record, 'record', out, '.build.yaml')}",
        f"  rows_sha256   {record.rows_sha256}",
        f"  parquet_sha256 {record.parquet_sha256}",
        f"  supervised    {counts.supervised_tokens:,} / {counts.total_tokens:,} tokens = {record.supervised_token_ratio:.4f}",
        f"  conversations {counts.conversations_packed:,} packed of {counts.source_rows_reached:,} reached "
        f"({record.dataset.source_rows:,} in the source); {sum(skipped.values()):,} skipped"
        + (": " + ", ".join(f"{k} {v}" for k, v in skipped.items()) if skipped else ""),
        f"  tokenizer     {record.tokenizer_source}; pins: "
        + (", ".join(f"{k} {v}" for k, v in record.pins.items()) or "none"),
        f"  renderer      {record.renderer}",
    ]
    if counts.tail_tokens_dropped is not None:
        lines.append(f"  --rows all    every full row until the source ended; {counts.tail_tokens_dropped:,} tokens "
                     "of the partial last row dropped")
    if counts.rows_dropped_without_targets:
        lines.append(f"  dropped       {counts.rows_dropped_without_targets} rows without supervised targets")
    return "\n".join(lines)


def _add_models(sub) -> None:
    p = sub.add_parser("models", help="list the model profiles", description="List the model profiles sftpack knows.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_models)


def cmd_models(args) -> int:
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


def _add_fetch_tokenizer(sub) -> None:
    p = sub.add_parser("fetch-tokenizer", help="download a profile's tokenizer files at its pinned revision, checked",
                       description="Download exactly the tokenizer files MODEL's profile needs, at its pinned revision "
                       "(else the commit main points at), through huggingface_hub (HF_ENDPOINT, HF_TOKEN apply), into "
                       "DIR; each file is checked against the profile's sha256 pin and removed if it differs (exit 1). "
                       "Then: sftpack build --model MODEL --tokenizer DIR.")
    p.add_argument("model", help="model profile (see `sftpack models`) or a profile file PATH.yaml")
    p.add_argument("directory", metavar="DIR", help="where the files go (created if missing)")
    p.set_defaults(func=cmd_fetch_tokenizer)


def cmd_fetch_tokenizer(args) -> int:
    from sftpack.families.profiles import load_profile
    from sftpack.tokenizers.fetch import fetch_tokenizer

    profile = load_profile(args.model)
    commit, files = fetch_tokenizer(profile, args.directory)
    print(f"fetched {profile.hub_repo}@{commit} into {args.directory}")
    width = max(len(f.name) for f in files)
    for f in files:
        print(f"  {f.name.ljust(width)}  sha256 {f.sha256}  {f.state}")
    print(f"build with: sftpack build --model {args.model} --tokenizer {args.directory}")
    return 0


def _add_hash(sub) -> None:
    p = sub.add_parser("hash", help="recompute rows_sha256 of a rows parquet", description=(
        "SHA-256 over the rows in order, each row = its tokens as little-endian int32 then its loss mask as one byte per token."))
    p.add_argument("rows", help="rows parquet written by sftpack build")
    p.add_argument("--json", action="store_true", help="all recomputed figures as JSON")
    p.set_defaults(func=cmd_hash)


def cmd_hash(args) -> int:
    from sftpack.base.hashing import file_sha256
    from sftpack.rows import hash_rows

    figures = hash_rows(args.rows)
    if args.json:
        figures["parquet_sha256"], figures["parquet_bytes"] = file_sha256(args.rows)
        print(json.dumps(figures, indent=2))
    else:
        print(f"{figures['rows_sha256']}  {args.rows}")
    return 0


def _add_convert(sub) -> None:
    from sftpack.rows.formats import ROW_FORMATS

    p = sub.add_parser("convert", help="write built rows in another rows format", description=(
        "Write the rows of ROWS (any rows format) as OUT/NAME.SUFFIX in the format --to, byte-identical to "
        "`build --format`, and the build record beside ROWS (when it describes these rows) as OUT/NAME.build.yaml "
        "with the new file's parquet_sha256. The rows and rows_sha256 are unchanged."))
    p.add_argument("rows", help="rows file (NAME.parquet, or another format's)")
    p.add_argument("--to", required=True, choices=sorted(ROW_FORMATS), help="the rows format to write")
    p.add_argument("out", help="output directory")
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args) -> int:
    from sftpack.builder.convert import convert_rows

    converted = convert_rows(args.rows, args.to, args.out, overwrite=args.overwrite)
    print(f"{converted.rows_sha256}  {converted.rows_file}  ({converted.rows:,} rows, {args.to})")
    print(f"record: {converted.record}" if converted.record else
          "record: none written (no build record beside the rows describes them)")
    return 0


def _add_encode(sub) -> None:
    p = sub.add_parser("encode", help="tokens and loss mask of one conversation (stdin JSON)", description=(
        "Read one conversation on stdin (a JSON list of messages, or an object with `messages`) and print "
        '{"tokens": [...], "loss_mask": [...]} (no packing, no EOS).'))
    p.add_argument("--model", required=True, help="model profile (see `sftpack models`)")
    p.add_argument("--tokenizer", help="local tokenizer directory or tokenizer.json")
    p.add_argument("--text", action="store_true", help="also print the rendered text")
    p.set_defaults(func=cmd_encode)


def cmd_encode(args) -> int:
    from sftpack.families.conversation import Skip
    from sftpack.families.encode import get_encoder

    try:  # bytes, so that a UTF-8 BOM is accepted (as in a JSONL source) and other encodings are refused clearly
        stream = getattr(sys.stdin, "buffer", None)  # (a text stream without one: tests, notebooks)
        data = json.loads(stream.read().decode("utf-8-sig") if stream else sys.stdin.read().removeprefix("\ufeff"))
    except UnicodeDecodeError as e:
        raise UsageError(f"stdin is not UTF-8 (byte {e.start})") from None
    except RecursionError:  # as in a JSONL source line (invalid_json there)
        raise UsageError("stdin is not usable JSON (nested too deeply)") from None
    except ValueError as e:
        raise UsageError(f"stdin is not JSON ({e})") from e
    messages = data.get("messages") if isinstance(data, dict) else data
    encoder = get_encoder(args.model, args.tokenizer)
    try:
        ids, mask = encoder(messages)
    except Skip as e:
        raise UsageError(f"the conversation would be skipped: {e}") from e
    out = {"tokens": ids.tolist(), "loss_mask": mask.tolist()}
    if args.text:
        out["text"] = encoder.render_text(messages)
    print(json.dumps(out, ensure_ascii=False))
    return 0


def _add_verify(sub) -> None:
    p = sub.add_parser("verify", help="check rows against a recipe or build record", description=(
        "Recompute every figure a recipe (OpenRecipes workload.dataset) or an sftpack build record declares and "
        "print field, declared, measured, OK/FAIL. Exit 0 all match, 1 any differs, 2 unusable input."))
    p.add_argument("recipe", metavar="RECIPE.yaml", help="OpenRecipes recipe or NAME.build.yaml")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--rows", metavar="ROWS.parquet", help="the rows parquet to check")
    what.add_argument("--rebuild", action="store_true", help="build the rows the recipe describes in a temporary "
                      "directory and check them (and the tokenizer files used)")
    add_arguments(p, ("source", "tokenizer", "workers"), help_prefix="with --rebuild: ", defaults=False,
                  notes={"source": "default: the declared source: hub for recipes", "workers": "default: all cores"})
    p.add_argument("--keep", metavar="DIR", help="with --rebuild: write the rebuilt rows to DIR instead of a temporary directory")
    p.add_argument("--against", metavar="OTHER.parquet", help="when rows_sha256 does not match, diff the rows with "
                   "OTHER.parquet (as `sftpack diff`): where they first differ and why")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.set_defaults(func=cmd_verify)


def cmd_verify(args) -> int:
    from sftpack.checks.rebuild import verify_rebuild
    from sftpack.checks.declared import load_declared
    from sftpack.checks.verify import format_report, report_json, rows_mismatch, verdict, verify_rows

    if not args.rebuild and (args.source or args.tokenizer or args.workers or args.keep):
        raise UsageError("--source, --tokenizer, --workers and --keep go with --rebuild")
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
                                on_mismatch=against if args.against else None)
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


def _add_diff(sub) -> None:
    p = sub.add_parser("diff", help="where two rows files first differ, and why", description=(
        "Compare two rows files row by row (streaming, a few row groups in memory): rows identical, the first "
        "differing row and position, tokens or loss mask only, the conversations there on both sides, both sides "
        "decoded around it, and the likely cause (tokenizer/template, loss-mask rule, order: seed, source revision "
        "or skipped rows, EOS, shift) with its evidence. Exit 0 identical, 1 different, 2 unusable input."))
    p.add_argument("a", metavar="A.parquet")
    p.add_argument("b", metavar="B.parquet")
    p.add_argument("--tokenizer", action="append", metavar="PATH", help="tokenizer that decodes the rows (default: the "
                   "model of each build record); once for both files, or twice: A's, then B's")
    p.add_argument("--model", help="model profile whose tokenizer decodes both files (default: each build record's)")
    p.add_argument("--no-decode", action="store_true", help="do not load a tokenizer or decode")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto", help="ANSI colour (as inspect)")
    p.set_defaults(func=cmd_diff)


def cmd_diff(args) -> int:
    from sftpack.checks.diff import diff_rows, format_diff

    result = diff_rows(args.a, args.b, tokenizer=args.tokenizer, model=args.model, decode=not args.no_decode)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(format_diff(result, color=_use_color(args)))
    return result["exit"]


def _add_inspect(sub) -> None:
    p = sub.add_parser("inspect", help="summary of a rows parquet, or one row decoded", description=(
        "Without --row: rows, tokens, supervised ratio, conversations and a histogram of supervised tokens per row. "
        "With --row K: the row decoded, supervised spans highlighted, conversation boundaries marked with source ids."))
    p.add_argument("rows", metavar="ROWS.parquet", help="rows parquet written by sftpack build")
    p.add_argument("--row", type=int, metavar="K", help="show row K (0-based)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--model", help="model profile whose tokenizer decodes the row (default: the build record's)")
    p.add_argument("--tokenizer", help="local tokenizer directory or tokenizer.json")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="ANSI colour for supervised spans (auto: when stdout is a terminal; else markers)")
    p.set_defaults(func=cmd_inspect)


def cmd_inspect(args) -> int:
    from sftpack.checks import inspect as inspection

    if args.row is None:
        info = inspection.summarize(args.rows)
        print(json.dumps(info, indent=2, ensure_ascii=False) if args.json else inspection.format_summary(info))
        return 0
    view = inspection.row_view(args.rows, args.row, inspection.resolve_vocab(args.rows, args.model, args.tokenizer,
                                                                            required=not args.json))
    if args.json:
        print(json.dumps(view, ensure_ascii=False))
    else:
        print(inspection.format_row(view, color=_use_color(args)))
    return 0


def _add_loss(sub) -> None:
    p = sub.add_parser("loss", help="step-0 loss of rows under a Hugging Face causal LM (needs torch)", description=(
        "Per-token mean cross-entropy over the supervised targets of the first --limit rows (target t predicted "
        "from position t-1), the LM head and softmax run in chunks of --chunk positions. Prints the loss, tokens/s, "
        "peak memory per GPU and, with --device-map, where each layer went. torch is the optional extra sftpack[loss]."))
    p.add_argument("--model", required=True, help="Hugging Face model id or local directory")
    p.add_argument("--revision", help="model revision (branch, tag or commit)")
    p.add_argument("--rows", required=True, metavar="ROWS.parquet", help="rows parquet written by sftpack build")
    p.add_argument("--limit", type=int, default=128, help="first rows to evaluate (default: 128)")
    p.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--device-map", choices=["auto"], help="auto: place the model across every visible GPU (and CPU, "
                   "offloaded) with accelerate; refused before any weight loads if it does not fit")
    p.add_argument("--max-memory", metavar="DEV=SIZE,...", help="with --device-map: weights allowed per device, "
                   "e.g. 0=60GiB,1=60GiB,cpu=200GiB (default: the free memory of each GPU and of the CPU)")
    p.add_argument("--compile", default="auto", choices=["auto", "yes", "no"], help="LM head + cross-entropy under "
                   "torch.compile: auto (default) when the head runs on CUDA; falls back to eager, saying why")
    p.add_argument("--dtype", default="bfloat16", help="bfloat16 (default), float16, float32 or float64")
    p.add_argument("--chunk", type=int, default=1024, help="positions per LM-head/cross-entropy chunk (default: 1024)")
    p.add_argument("--per-row", action="store_true", help="also report each row's loss")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the model repository's own code")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no stage lines or bar on stderr")
    p.set_defaults(func=cmd_loss)


def cmd_loss(args) -> int:
    from sftpack.trainer.loss import format_result, loss_of_rows

    result = loss_of_rows(args.model, args.rows, revision=args.revision, limit=args.limit, device=args.device,
                          dtype=args.dtype, chunk=args.chunk, per_row=args.per_row, trust_remote_code=args.trust_remote_code,
                          device_map=args.device_map, max_memory=args.max_memory, compile=args.compile,
                          progress=args.progress)
    print(json.dumps(result, indent=2) if args.json else format_result(result))
    return 0


def _use_color(args) -> bool:
    """``--color``: always, never, or auto (when stdout is a terminal)."""
    return args.color == "always" or (args.color == "auto" and sys.stdout.isatty())


COMMANDS = [_add_build, _add_models, add_new_model, _add_fetch_tokenizer, _add_hash, _add_convert, _add_encode,
            _add_verify, _add_inspect, _add_diff, _add_loss]
