"""Where a build cannot run on a Ray cluster it says so in one line naming the address and the reason (exit 2),
and writes nothing: Ray not installed, an address nobody answers at, a ready tokenizer or source that the cluster's
nodes cannot share; a node whose tokenizer is not the driver's refuses to encode."""

from __future__ import annotations

import socket
import sys

import pytest

from helpers.rows_fixtures import offline
from sftpack.base.errors import UsageError
from sftpack.builder.config import BuildConfig
from sftpack.builder.pipeline import build
from sftpack.cli import main

MODEL = "Qwen3.5-122B-A10B"


def build_argv(out, address) -> list[str]:
    return ["build", "--model", MODEL, "--source", "sample", "--rows", "4", "--out", str(out), "--no-progress",
            "--ray", address]


def test_without_ray_installed_one_line_names_the_address_and_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where it is not installed
    assert main(build_argv(tmp_path / "out", "auto")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sftpack: error: --ray auto: Ray is not installed here"), err
    assert "pip install 'sftpack[ray]'" in err[0]
    assert not list((tmp_path / "out").glob("*"))
    with pytest.raises(UsageError, match=r"^ray='auto': Ray is not installed here"):
        build(BuildConfig(model=MODEL, source="sample", rows=4, out=str(tmp_path / "py"), ray="auto"))


def test_an_address_nobody_answers_at_is_one_line_and_exit_2(tmp_path, capsys):
    pytest.importorskip("ray")
    with socket.socket() as s:  # a port of 127.0.0.1 that was free a moment ago: nothing listens there now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    assert main(build_argv(tmp_path / "out", address)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"sftpack: error: --ray {address}: cannot reach the Ray cluster's head (Connection refused)"]
    assert not list((tmp_path / "out").glob("*"))


@pytest.mark.parametrize("address", ["", "head-without-port", "head:port"])
def test_a_ray_option_that_is_no_address_is_refused(address, tmp_path, capsys):
    pytest.importorskip("ray")
    assert main(build_argv(tmp_path / "out", address)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sftpack: error: --ray ") and ("not a Ray address" in err or "a Ray address is needed" in err)


def test_a_ready_tokenizer_or_source_cannot_go_to_a_cluster(tmp_path):
    from sftpack.sources import open_source

    with pytest.raises(UsageError, match=r"^ray='127.0.0.1:1': every node loads the tokenizer and opens the source"):
        build(BuildConfig(model=MODEL, rows=4, out=str(tmp_path), ray="127.0.0.1:1"), source=open_source("sample"))


def test_a_node_whose_tokenizer_is_not_the_drivers_refuses(tmp_path):
    from sftpack.builder.cluster.tasks import Load, Work, fingerprint, ready
    from sftpack.families.encode import make_encoder
    from sftpack.families.profiles import load_profile
    from sftpack.sources import open_source
    from sftpack.tokenizers.loading import load_vocab

    profile = load_profile(MODEL)
    with offline():
        encoder = make_encoder(profile, load_vocab(profile))
        driver = list(fingerprint(profile, encoder, open_source("sample")))
        other = ("the tokenizer", ("another tokenizer.json", {"tokenizer.json": "0" * 64}, "<|im_end|>"))
        driver[2] = other  # what a driver that loaded other tokenizer files would expect
        work = Work(Load("build-1", MODEL, None, False, "auto", "sample", None, False), tuple(driver))
        with pytest.raises(UsageError, match=r"^the tokenizer this node loads is not the driver's \(.*every node must"):
            ready(work)
        driver[2] = fingerprint(profile, encoder, open_source("sample"))[2]
        load = Load("build-2", MODEL, None, False, "auto", "sample", None, False)
        encoder_again, source = ready(Work(load, tuple(driver)))
        assert len(source) == 3000 and encoder_again.renderer_description == encoder.renderer_description
