"""``sftpack convert``: built rows written in another rows format, with their build record."""

from __future__ import annotations


def add(sub):
    from sftpack.rows.formats import ROW_FORMATS

    p = sub.add_parser("convert", help="write built rows in another rows format", description=(
        "Write the rows of ROWS (any rows format) as OUT/NAME.SUFFIX in the format --to, byte-identical to "
        "`build --format`, and the build record beside ROWS (when it describes these rows) as OUT/NAME.build.yaml "
        "with the new file's parquet_sha256. The rows and rows_sha256 are unchanged."))
    p.add_argument("rows", help="rows file (NAME.parquet, or another format's)")
    p.add_argument("--to", required=True, choices=sorted(ROW_FORMATS), help="the rows format to write")
    p.add_argument("out", help="output directory")
    p.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    return p


def run(args) -> int:
    from sftpack.builder.convert import convert_rows

    converted = convert_rows(args.rows, args.to, args.out, overwrite=args.overwrite)
    print(f"{converted.rows_sha256}  {converted.rows_file}  ({converted.rows:,} rows, {args.to})")
    print(f"record: {converted.record}" if converted.record else
          "record: none written (no build record beside the rows describes them)")
    return 0
