"""docs/operations.md's files: the systemd unit and the example Prometheus alert rules.

The unit is checked by systemd's own `systemd-analyze verify` (with ExecStart pointed at this
checkout's svcm, since verify wants the program to exist); every warning fails it. The alert
rules are YAML that Prometheus' rule files take (groups of rules with alert, expr, labels,
annotations) and the guide shows them as they are; that they name only metrics the service
exposes is checked against a real scrape in tests/test_internal_metrics.py.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
UNIT = ROOT / "examples" / "systemd" / "svc.service"
ALERTS = ROOT / "examples" / "prometheus" / "svc-alerts.yml"
GUIDE = ROOT / "docs" / "operations.md"


def test_the_unit_runs_svcm_serve_as_its_own_user() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(UNIT.read_text())
    service = unit["Service"]
    assert service["ExecStart"].endswith("/svcm serve")
    assert service["User"] == "svc" and service["StateDirectory"] == "svc"
    assert service["Environment"] == "SVC_DATA_DIR=/var/lib/svc"  # the state directory
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    assert str(UNIT.relative_to(ROOT)) in GUIDE.read_text()


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="no systemd-analyze here")
def test_systemd_verifies_the_unit(tmp_path: Path) -> None:
    svcm = Path(sys.executable).parent / "svcm"
    text = UNIT.read_text().replace("/opt/svc/.venv/bin/svcm", str(svcm))
    unit = tmp_path / "svc.service"
    unit.write_text(text)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_the_alert_rules_are_a_prometheus_rule_file_shown_in_the_guide() -> None:
    text = ALERTS.read_text()
    groups = yaml.safe_load(text)["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert len(rules) >= 15
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert rule["alert"].startswith("Svc") and rule["expr"].strip()
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"]
    assert len({rule["alert"] for rule in rules}) == len(rules)
    # the guide shows the file as it is
    assert f"```yaml\n{text}```" in GUIDE.read_text()
