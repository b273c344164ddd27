"""``sftpack fetch-tokenizer``: a profile's tokenizer files at its pinned revision, checked."""

from __future__ import annotations


def add(sub):
    p = sub.add_parser("fetch-tokenizer", help="download a profile's tokenizer files at its pinned revision, checked",
                       description="Download exactly the tokenizer files MODEL's profile needs, at its pinned revision "
                       "(else the commit main points at), through huggingface_hub (HF_ENDPOINT, HF_TOKEN apply), into "
                       "DIR; each file is checked against the profile's sha256 pin and removed if it differs (exit 1). "
                       "Then: sftpack build --model MODEL --tokenizer DIR.")
    p.add_argument("model", help="model profile (see `sftpack models`) or a profile file PATH.yaml")
    p.add_argument("directory", metavar="DIR", help="where the files go (created if missing)")
    return p


def run(args) -> int:
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
