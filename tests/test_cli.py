"""The ``cmtm`` command line: exit codes, one-line errors, JSON output."""
import json

import pytest

from ioc.cli import main


def test_check_jacobians_json_reports_every_quantity_within_tolerance(capsys):
    assert main(["check-jacobians", "--model", "chain3", "--order", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    import cmtm
    assert [row["quantity"] for row in report["rows"]] == list(cmtm.QUANTITIES)
    assert report["passed"] and report["nv"] == 3
    assert all(row["rel_diff"] <= report["tolerance"] for row in report["rows"])
    assert all(row["max_abs_J"] > 0 for row in report["rows"])


def test_check_jacobians_fails_when_tolerance_is_impossible(capsys):
    # central differences cannot reach 1e-30 relative: the command must say FAILED, exit 1
    assert main(["check-jacobians", "--model", "chain3", "--order", "0",
                 "--tolerance", "1e-30"]) == 1
    assert "FAILED" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["check-jacobians", "--model", "robot9000", "--order", "1"], "--model: expected"),
    (["check-jacobians", "--model", "chain0", "--order", "1"], "--model: expected"),
])
def test_bad_model_is_a_one_line_error(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_negative_order_is_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["check-jacobians", "--model", "chain3", "--order", "-1"])
    assert exit_info.value.code == 2
