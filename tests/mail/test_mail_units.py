"""The pure parts of mail: periods in a time zone, the SMTP URL, the report's figures, the
alert option's bounds, the PNG writer."""

from __future__ import annotations

import struct
import zlib
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from svc.errors import InvalidRequest
from svc.mail import mail_enabled
from svc.mail.alerts import (
    DEFAULTS,
    Alert,
    check_option,
    compared_hours,
    last_complete_hour,
    render,
)
from svc.mail.chart import bar_chart
from svc.mail.periods import last_complete
from svc.mail.report import change, shown
from svc.mail.smtp import SmtpConfig, sender
from svc.meta.store import Project
from svc.settings import Settings
from tests.dashboard.test_dashboard_live import duration as page_duration


def test_periods_end_in_the_project_time_zone() -> None:
    # Monday 2026-11-02 03:00 UTC is still Sunday 1 November in New York
    now = datetime(2026, 11, 2, 3, 0, tzinfo=UTC)
    day = last_complete("daily", "America/New_York", now)
    assert (day.rng.first, day.key) == (date(2026, 10, 31), "day:2026-10-31")
    assert last_complete("daily", "UTC", now).rng.first == date(2026, 11, 1)
    week = last_complete("weekly", "UTC", now)
    assert (week.rng.first, week.rng.last) == (date(2026, 10, 26), date(2026, 11, 1))
    assert last_complete("weekly", "America/New_York", now).rng.first == date(2026, 10, 19)
    month = last_complete("monthly", "UTC", now)
    assert (month.rng.first, month.rng.last, month.key) == (
        date(2026, 10, 1),
        date(2026, 10, 31),
        "month:2026-10",
    )
    assert last_complete("monthly", "Asia/Tokyo", datetime(2026, 3, 31, 16, tzinfo=UTC)).key == (
        "month:2026-03"
    )


def test_smtp_url() -> None:
    c = SmtpConfig.parse("smtp://ann%40x.io:p%2Fw@mail.example.com:587?starttls=true")
    assert (c.host, c.port, c.tls, c.starttls, c.user, c.password) == (
        "mail.example.com",
        587,
        False,
        True,
        "ann@x.io",
        "p/w",
    )
    assert SmtpConfig.parse("smtps://mail.example.com").port == 465
    assert SmtpConfig.parse("smtp://localhost").port == 25
    for bad in ("http://x", "smtp://", "smtp://h?tls=1", "smtp://h:port"):
        with pytest.raises(ValueError, match="SVC_SMTP_URL"):
            SmtpConfig.parse(bad)
    assert not mail_enabled(Settings()) and mail_enabled(Settings(smtp_url="smtp://h"))
    assert sender(Settings(base_url="https://stats.acme.io")) == "svc@stats.acme.io"
    assert sender(Settings(mail_from="A <a@b.c>")) == "A <a@b.c>"


def test_figures_and_changes() -> None:
    assert shown(12345, "int") == "12,345" and shown(75.4, "seconds") == "1m 15s"
    # a visit duration reads as on the dashboard the report links to (one format everywhere)
    for seconds, text in (
        (0, "0s"), (0.18, "180ms"), (4.2, "4.2s"), (9.96, "10s"), (45, "45s"),
        (59.96, "1m 00s"), (119.6, "2m 00s"), (128, "2m 08s"), (3599.6, "1h 00m"),
        (3725, "1h 02m"),
    ):  # fmt: skip
        assert shown(seconds, "seconds") == text == page_duration(seconds), seconds
    assert change(150, 100, "int") == "+50%" and change(3, 0, "int") == "new"
    assert change(0, 0, "int") == "=" and change("40.0%", "42.5%", "percent") == "-2.5 pts"


def test_alert_option_bounds() -> None:
    assert check_option({"spikeFactor": 2, "baselineDays": 14}) == {
        "spikeFactor": 2,
        "baselineDays": 14,
    }
    for bad, field in (
        ({"spikeFactor": 1}, "options.alerts.spikeFactor"),
        ({"dropFactor": True}, "options.alerts.dropFactor"),
        ({"baselineDays": 1.5}, "options.alerts.baselineDays"),
        ({"other": 1}, "options.alerts.other"),
    ):
        with pytest.raises(InvalidRequest) as err:
            check_option(bad)
        assert err.value.field == field
    with pytest.raises(InvalidRequest):
        check_option([])


def test_alerts_compare_the_same_local_hour_across_daylight_saving() -> None:
    ny = ZoneInfo("America/New_York")
    # 14:00-15:00 in New York on Tuesday 3 November 2026, two days after clocks went back
    now = datetime(2026, 11, 3, 15, 10, tzinfo=ny)
    hour = last_complete_hour(now, "America/New_York")
    assert hour == datetime(2026, 11, 3, 19, 0, tzinfo=UTC)
    earlier = compared_hours(hour, "America/New_York", 7)
    assert [h.astimezone(ny).strftime("%m-%d %H:%M") for h in earlier] == [
        f"{d} 14:00" for d in ("11-02", "11-01", "10-31", "10-30", "10-29", "10-28", "10-27")
    ]
    assert [h.hour for h in earlier] == [19, 19, 18, 18, 18, 18, 18]  # UTC: EST, then EDT
    # the spring change: 02:00-03:00 did not exist on 8 March 2026, so that day is left out
    spring = compared_hours(datetime(2026, 3, 10, 2, 0, tzinfo=ny), "America/New_York", 3)
    assert [h.astimezone(ny).strftime("%m-%d %H:%M") for h in spring] == [
        "03-09 02:00",
        "03-07 02:00",
    ]
    # a zone with a half-hour offset: its hours start at :30 UTC
    kolkata = last_complete_hour(datetime(2026, 11, 3, 10, 45, tzinfo=UTC), "Asia/Kolkata")
    assert kolkata == datetime(2026, 11, 3, 9, 30, tzinfo=UTC)
    assert compared_hours(kolkata, "Asia/Kolkata", 1) == [datetime(2026, 11, 2, 9, 30, tzinfo=UTC)]
    assert last_complete_hour(datetime(2026, 11, 3, 10, 45, tzinfo=UTC)) == datetime(
        2026, 11, 3, 9, 0, tzinfo=UTC
    )


def test_an_alert_mail_gives_the_local_hour_and_the_days_averaged() -> None:
    project = Project("p1", "Acme", "America/New_York", ("acme.test",), "free")
    hour = datetime(2026, 3, 10, 7, 0, tzinfo=UTC)  # 03:00-04:00 EDT, two days after the change
    alert = Alert(project, hour, "drop", 1, 20.0, dict(DEFAULTS), days=6)
    subject, text, html = render(alert, "https://stats.example.org", "https://u.example/x")
    assert subject == "Traffic drop on Acme: 1 visitors 2026-03-10 03:00–04:00 EDT (0.1× usual)"
    assert "same hour of the 6 days before" in text and "from=2026-03-10" in text
    assert "03:00–04:00 EDT" in html


def test_chart_is_a_valid_png() -> None:
    data = bar_chart([0, 3, 9, 1], [2, 2, 2, 2], width=40, height=20)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks = 8, {}
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks[kind] = body
        offset += 12 + length
    width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
    raw = zlib.decompress(chunks[b"IDAT"])
    assert (width, height) == (40, 20) and len(raw) == height * (1 + 3 * width)
