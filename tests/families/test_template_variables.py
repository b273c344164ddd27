"""Reproducible renders: a template that reads the clock is rendered with the date the profile pins (new-model
writes it), so the rows are the same whatever the day; a jinja profile of such a template without one is refused
in one line; a jinja profile's template variables are handed to the template, recorded, and named in the build."""

from __future__ import annotations

import datetime

import pytest
import yaml

from helpers.family_vocabs import save_template_stand_in_dir
from sftpack.cli import main

CLOCK = ("{{ bos_token }}<|start_header_id|>system<|end_header_id|>\n\nToday Date: {{ strftime_now('%d %b %Y') }}"
         "{% if enable_thinking is defined and enable_thinking is false %} /no_think{% endif %}<|eot_id|>"
         "{% for m in messages %}{% if m.role != 'system' %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
         "{{ m.content | trim }}<|eot_id|>{% endif %}{% endfor %}"
         "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")


def fake_clock(monkeypatch, day: datetime.date) -> None:
    """transformers' strftime_now reads datetime.now(): the day the template would see unpinned."""
    import transformers.utils.chat_template_utils as utils

    class Clock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls.combine(day, datetime.time(12))

    monkeypatch.setattr(utils, "datetime", Clock)


def build(tmp_path, profile, directory, out, capsys) -> tuple[int, str, dict | None]:
    code = main(["build", "--model", str(profile), "--tokenizer", str(directory), "--source", "sample", "--rows", "2",
                 "--row-tokens", "512", "--workers", "1", "--out", str(tmp_path / out), "--no-progress"])
    err = capsys.readouterr().err
    records = list((tmp_path / out).glob("*.build.yaml")) if code == 0 else []
    return code, err, yaml.safe_load(records[0].read_text(encoding="utf-8")) if records else None


def builds_on_two_days(tmp_path, profile, directory, monkeypatch, capsys) -> list[dict]:
    """The build records of two builds, each on another faked day (``rows0``, ``rows1``)."""
    records = []
    for n, day in enumerate((datetime.date(2026, 12, 4), datetime.date(2027, 3, 9))):
        fake_clock(monkeypatch, day)
        code, err, record = build(tmp_path, profile, directory, f"rows{n}", capsys)
        assert code == 0, err
        records.append(record)
    return records


@pytest.fixture
def clock_model(tmp_path, capsys):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", CLOCK, "<|eot_id|>", "<|begin_of_text|>")
    assert main(["new-model", "--tokenizer", str(directory), "--name", "Clock-Model", "--out", str(tmp_path / "m"),
                 "--date", "2026-01-02"]) == 0
    capsys.readouterr()
    return directory, tmp_path / "m" / "configs" / "Clock-Model.yaml"


def test_the_pinned_date_gives_the_same_rows_on_two_days(clock_model, tmp_path, monkeypatch, capsys):
    directory, profile = clock_model
    assert yaml.safe_load(profile.read_text(encoding="utf-8"))["template_options"] == {"date": "2026-01-02"}
    records = builds_on_two_days(tmp_path, profile, directory, monkeypatch, capsys)
    assert all("date 2026-01-02 (the template's clock pinned)" in record["renderer"] for record in records)
    assert records[0]["rows_sha256"] == records[1]["rows_sha256"]
    from sftpack.rows import read_rows

    tokens, _ = read_rows(next((tmp_path / "rows0").glob("*.parquet")))
    from tokenizers import Tokenizer

    text = Tokenizer.from_file(str(directory / "tokenizer.json")).decode(tokens[0].tolist(), skip_special_tokens=False)
    assert "Today Date: 02 Jan 2026" in text


def test_the_day_would_change_the_rows_unpinned(clock_model, tmp_path, monkeypatch):
    """The control: the same template through transformers, unpinned, writes the faked day."""
    from helpers.shared import jinja_render

    fake_clock(monkeypatch, datetime.date(2026, 12, 4))
    assert "Today Date: 04 Dec 2026" in jinja_render(CLOCK, [{"role": "user", "content": "q"}], bos_token="")


@pytest.mark.parametrize("model", ["profile", "GLM-5.2-744B-A40B"])
def test_a_jinja_profile_of_a_clock_reading_template_without_a_date_is_refused(model, clock_model, tmp_path, capsys):
    directory, profile = clock_model
    if model == "profile":
        text = profile.read_text(encoding="utf-8").replace('template_options: {date: "2026-01-02"}\n', "")
        profile.write_text(text, encoding="utf-8")
        model = str(profile)
    code, err, _ = build(tmp_path, model, directory, "rows", capsys)
    lines = [line for line in err.splitlines() if "warning" not in line]
    assert code == 2 and len(lines) == 1
    assert "reads the clock (strftime_now)" in lines[0] and "template_options: {date: YYYY-MM-DD}" in lines[0]
    assert not (tmp_path / "rows").exists() or not list((tmp_path / "rows").iterdir())


def test_template_variables_are_handed_to_the_template_recorded_and_named(tmp_path, capsys):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", CLOCK, "<|eot_id|>", "<|begin_of_text|>")
    assert main(["new-model", "--tokenizer", str(directory), "--name", "Clock-Model", "--out", str(tmp_path / "m"),
                 "--template-option", "enable_thinking=false"]) == 0
    capsys.readouterr()
    profile = tmp_path / "m" / "configs" / "Clock-Model.yaml"
    data = yaml.safe_load(profile.read_text(encoding="utf-8"))
    assert data["template_options"] == {"enable_thinking": False, "date": "2025-08-05"}
    assert data["build_name"] == "clock-model-tulu3-fixed8192-v1-enablethinkingfalse"
    code, err, record = build(tmp_path, profile, directory, "rows", capsys)
    assert code == 0, err
    assert "enable_thinking false" in record["renderer"] and record["name"].startswith(data["build_name"])
    from sftpack.families.encode import get_encoder

    text, _ = get_encoder(str(profile), str(directory)).prepare([{"role": "user", "content": "q"},
                                                                 {"role": "assistant", "content": "a"}])
    assert "Today Date: 05 Aug 2025 /no_think" in text


def test_a_jinja_profile_refuses_a_date_that_is_no_date(clock_model, capsys):
    _, profile = clock_model
    profile.write_text(profile.read_text(encoding="utf-8").replace("2026-01-02", "Jan 2"), encoding="utf-8")
    from sftpack.families.profiles import load_profile

    with pytest.raises(Exception, match=r"template_options.date': the pinned date must be YYYY-MM-DD"):
        load_profile(str(profile))


# the clock reached through a name of the template's own: the text check cannot see it, the renders do
ALIAS = CLOCK.replace("Today Date: {{ strftime_now('%d %b %Y') }}",
                      "{% set clock = strftime_now %}Today Date: {{ clock('%d %b %Y') }}")


def test_a_clock_reached_through_another_name_is_pinned_by_new_model_and_refused_unpinned(tmp_path, monkeypatch, capsys):
    from sftpack.families.template_vars import clock_reads

    assert ALIAS != CLOCK and clock_reads(ALIAS) == []
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", ALIAS, "<|eot_id|>", "<|begin_of_text|>")
    assert main(["new-model", "--tokenizer", str(directory), "--name", "Alias-Model", "--out", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    profile = tmp_path / "m" / "configs" / "Alias-Model.yaml"
    assert yaml.safe_load(profile.read_text(encoding="utf-8"))["template_options"] == {"date": "2025-08-05"}
    records = builds_on_two_days(tmp_path, profile, directory, monkeypatch, capsys)
    assert records[0]["rows_sha256"] == records[1]["rows_sha256"]
    from sftpack.families.encode import get_encoder

    text, _ = get_encoder(str(profile), str(directory)).prepare([{"role": "user", "content": "q"},
                                                                 {"role": "assistant", "content": "a"}])
    assert "Today Date: 05 Aug 2025" in text
    # the same profile without its date: the day is never read, the build refused in one line
    profile.write_text(profile.read_text(encoding="utf-8").replace('template_options: {date: "2025-08-05"}\n', ""),
                       encoding="utf-8")
    assert "template_options" not in profile.read_text(encoding="utf-8")
    code, err, _ = build(tmp_path, profile, directory, "unpinned", capsys)
    lines = [line for line in err.splitlines() if "warning" not in line]
    assert code == 2 and len(lines) == 1, err
    assert "reads the clock (strftime_now)" in lines[0] and "template_options: {date: YYYY-MM-DD}" in lines[0]
    assert not (tmp_path / "unpinned").exists() or not list((tmp_path / "unpinned").iterdir())
    # the encoder made from the file as it read before is not the edited file's
    from sftpack.base.errors import UsageError

    with pytest.raises(UsageError, match=r"reads the clock \(strftime_now\)"):
        get_encoder(str(profile), str(directory))


def test_a_clock_reached_only_by_some_conversations_is_refused_for_them_never_read(tmp_path, monkeypatch, capsys):
    """Neither the text nor the short render shows this clock: the conversations that reach it are skipped, and the
    rest never hold the day."""
    sometimes = CLOCK.replace("Today Date: {{ strftime_now('%d %b %Y') }}",
                              "{% set c = strftime_now %}{% if messages | length > 3 %}Today Date: {{ c('%Y') }}"
                              "{% endif %}")
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", sometimes, "<|eot_id|>", "<|begin_of_text|>")
    assert main(["new-model", "--tokenizer", str(directory), "--name", "Sometimes-Model", "--out", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    profile = tmp_path / "m" / "configs" / "Sometimes-Model.yaml"
    assert "template_options" not in profile.read_text(encoding="utf-8")  # nothing showed the clock
    fake_clock(monkeypatch, datetime.date(2026, 12, 4))
    code = main(["build", "--model", str(profile), "--tokenizer", str(directory), "--source", "sample", "--rows", "64",
                 "--row-tokens", "512", "--workers", "1", "--out", str(tmp_path / "rows"), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    record = yaml.safe_load(next((tmp_path / "rows").glob("*.build.yaml")).read_text(encoding="utf-8"))
    assert record["counts"]["skipped"].get("template_error", 0) > 0
    from sftpack.rows import read_rows
    from tokenizers import Tokenizer

    tokens, _ = read_rows(next((tmp_path / "rows").glob("*.parquet")))
    text = Tokenizer.from_file(str(directory / "tokenizer.json")).decode(tokens.ravel().tolist(), skip_special_tokens=False)
    assert "Today Date" not in text and "2026" not in text
