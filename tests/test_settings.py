from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuselect.settings import Settings, load, save


def test_defaults_when_missing(tmp_path: Path) -> None:
    assert load(tmp_path / "none.json") == (Settings(), [])


def test_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "settings.json"
    s = Settings(
        electricity_usd_per_kwh=0.31,
        currency_symbol="€",
        usd_to_currency=0.92,
        default_budget_usd=5000.0,
        redact_reports=True,
    )
    save(s, p)
    assert load(p) == (s, [])


def test_bad_values_are_named_and_the_rest_kept(tmp_path: Path) -> None:
    p = tmp_path / "settings.json"
    p.write_text(
        json.dumps(
            {
                "electricity_usd_per_kwh": -3,
                "currency_symbol": "€",
                "default_deadline_hours": "soon",
                "colour": "red",
                "redact_reports": "yes",
                "usd_to_currency": float("1e300"),
            }
        )
    )
    s, problems = load(p)
    assert s.currency_symbol == "€" and s.electricity_usd_per_kwh == 0.15 and s.default_deadline_hours == 72.0
    text = " ".join(problems)
    for word in ("electricity_usd_per_kwh", "default_deadline_hours", "colour", "redact_reports", "usd_to_currency"):
        assert word in text


def test_corrupt_file_is_reported_and_kept_when_saving(tmp_path: Path) -> None:
    p = tmp_path / "settings.json"
    p.write_text("{ this is not json")
    s, problems = load(p)
    assert s == Settings() and "not valid JSON" in problems[0]
    assert p.read_text() == "{ this is not json"  # loading never rewrites it
    save(Settings(currency_symbol="£"), p)
    backups = list(tmp_path.glob("settings.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == "{ this is not json"
    assert load(p)[0].currency_symbol == "£"


def test_a_currency_symbol_with_a_control_character_is_refused(tmp_path: Path) -> None:
    # "\u001b[2J" was accepted and cleared the terminal before every cost.
    p = tmp_path / "settings.json"
    for bad in ("\u001b[2J", "$\u0007", "\u200e€"):
        p.write_text(json.dumps({"currency_symbol": bad}))
        s, problems = load(p)
        assert s.currency_symbol == "$" and "printable characters" in " ".join(problems)


def test_a_zero_default_budget_means_none_and_a_refused_one_is_named(tmp_path: Path) -> None:
    # A hand-written "default_budget_usd": 0 was taken as a budget of $0, which the estimate
    # refuses: every `estimate` and `report` then failed with "the budget 0 is outside
    # 0.001..1e+10", naming neither the setting nor the file.
    from gpuselect.app.workflows import assumptions

    p = tmp_path / "settings.json"
    p.write_text(json.dumps({"default_budget_usd": 0}))
    s, problems = load(p)
    assert s.default_budget_usd is None and problems == []
    assert assumptions(s).budget_usd is None
    p.write_text(json.dumps({"default_budget_usd": 0.0001}))
    s, problems = load(p)
    assert s.default_budget_usd is None and "default_budget_usd" in problems[0]
    assert assumptions(s).budget_usd is None


def test_a_setting_given_twice_is_named_and_the_file_kept_when_saving(tmp_path: Path) -> None:
    # json kept the last value silently: electricity at $50/kWh, the $0.10 above it unseen.
    p = tmp_path / "settings.json"
    text = '{"electricity_usd_per_kwh": 0.1, "electricity_usd_per_kwh": 50}'
    p.write_text(text)
    s, problems = load(p)
    assert s == Settings() and "'electricity_usd_per_kwh' twice" in problems[0]
    save(Settings(currency_symbol="£"), p)
    backups = list(tmp_path.glob("settings.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == text


def test_no_home_at_all_runs_on_the_defaults(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A container under an arbitrary user id, HOME unset: every command was an internal error
    (exit 70, "please report it"); they run on the defaults and say why once."""
    import pwd

    from gpuselect import notices
    from gpuselect.cli import main

    for var in ("GPUSELECT_CONFIG_DIR", "XDG_CONFIG_HOME", "HOME"):
        monkeypatch.delenv(var, raising=False)

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    notices.reset()
    try:
        assert main(["estimate", "--workload", "resnet50", "--format", "json"]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out)["kind"] == "estimate"
        assert err.count("no config folder: HOME is not set") == 1 and "internal error" not in err
        assert main(["catalog", "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["overlay"] is None
        assert load()[0] == Settings()
    finally:
        notices.reset()
