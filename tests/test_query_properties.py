"""Property-based: breakdowns sum to the total, a filter and its negation split it, and no
query ever sees another project's events."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Server
from tests.test_metrics_golden import DAY, UA, at

REFERRERS = [None, "https://www.google.com/", "https://bing.com/", "https://acme.test/x"]
events_strategy = st.lists(
    st.builds(
        lambda visitor, minute, name, path, ref, plan: {
            "event": name,
            "url": f"https://acme.test{path}",
            "ts": at(0, minute),
            "ip": f"10.9.0.{visitor}",
            "userAgent": UA.format(visitor),
            **({"referrer": ref} if ref else {}),
            **({"properties": {"plan": plan}} if plan else {}),
        },
        visitor=st.integers(1, 6),
        minute=st.integers(0, 600),
        name=st.sampled_from(["page_view", "page_view", "signup"]),
        path=st.sampled_from(["/", "/a", "/b"]),
        ref=st.sampled_from(REFERRERS),
        plan=st.sampled_from([None, None, "pro", "free"]),
    ),
    min_size=1,
    max_size=40,
).map(lambda evs: sorted(evs, key=lambda e: e["ts"]))

D = DAY.date().isoformat()


def read(server: Server, key: str, path: str, /, **params: Any) -> dict[str, Any]:
    r = httpx.get(
        server.url + path,
        params={"from": D, "to": D, **params},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(events=events_strategy, noise=events_strategy)
def test_sums_partitions_and_isolation(server: Server, events: list, noise: list) -> None:
    mine = server.create_project("prop-" + uuid.uuid4().hex[:10], domains=["acme.test"])
    other = server.create_project("noise-" + uuid.uuid4().hex[:10], domains=["acme.test"])
    key = mine["keys"]["secret"]
    assert server.send(key, events).json()["accepted"] == len(events)
    assert server.send(other["keys"]["secret"], noise).json()["accepted"] == len(noise)
    server.wait_loaded()

    total = read(server, key, "/metrics")
    # isolation: exactly what was sent to this project
    assert total["events"] == len(events)
    assert total["pageviews"] == sum(e["event"] == "page_view" for e in events)
    assert total["visitors"] == len({e["ip"] for e in events})

    # breakdowns add up to the total
    by_source = read(server, key, "/metrics/breakdown", by="source")["rows"]
    assert sum(r["sessions"] for r in by_source) == total["sessions"]
    assert sum(r["pageviews"] for r in by_source) == total["pageviews"]
    assert {r["value"]: r["sessions"] for r in by_source} == total["trafficSources"]
    by_page = read(server, key, "/metrics/breakdown", by="page")["rows"]
    assert sum(r["pageviews"] for r in by_page) == total["pageviews"]
    by_event = read(server, key, "/metrics/breakdown", by="event")["rows"]
    assert sum(r["events"] for r in by_event) == total["events"]
    assert sum(r["pageviews"] for r in by_event) == total["pageviews"]
    with_plan = sum("properties" in e for e in events)
    by_plan = read(server, key, "/metrics/breakdown", by="prop:plan")["rows"]
    assert sum(r["events"] for r in by_plan) == with_plan
    keys = read(server, key, "/metrics/properties")["keys"]
    assert keys == ([{"key": "plan", "events": with_plan}] if with_plan else [])
    plans = read(server, key, "/metrics/properties", key="plan")["values"]
    assert sum(v["events"] for v in plans) == with_plan
    assert plans == [  # the breakdown's rows, by events
        {"value": r["value"], "events": r["events"], "visitors": r["visitors"]}
        for r in read(server, key, "/metrics/breakdown", by="prop:plan", order="-events")["rows"]
    ]
    series = read(server, key, "/metrics/timeseries", interval="hour")["points"]
    assert sum(p["pageviews"] for p in series) == total["pageviews"]
    assert sum(p["sessions"] for p in series) == total["sessions"]

    # a filter and its negation split the total: sessions for session dimensions ...
    yes = read(server, key, "/metrics", filter="source:is:google")
    no = read(server, key, "/metrics", filter="source:is_not:google")
    assert yes["sessions"] + no["sessions"] == total["sessions"]
    assert yes["pageviews"] + no["pageviews"] == total["pageviews"]
    # (a filtered page breakdown adds up to the filtered total)
    pages = read(server, key, "/metrics/breakdown", by="page", filter="source:is:google")["rows"]
    assert sum(r["pageviews"] for r in pages) == yes["pageviews"]
    # ... and events for event dimensions
    yes = read(server, key, "/metrics", filter="page:is:/a")
    no = read(server, key, "/metrics", filter="page:is_not:/a")
    assert yes["events"] + no["events"] == total["events"]
    assert yes["pageviews"] + no["pageviews"] == total["pageviews"]
    pages = read(server, key, "/metrics/breakdown", by="page", filter="page:is_not:/a")["rows"]
    assert "/a" not in {r["value"] for r in pages}
    assert sum(r["pageviews"] for r in pages) == no["pageviews"]
    # (the events that name or carry something are read from report_events; their negations
    # from every event: two ways that must agree)
    for flt, negation in (
        ("event:is:signup", "event:is_not:signup"),
        ("prop:plan:is:pro", "prop:plan:is_not:pro"),
    ):
        yes = read(server, key, "/metrics", filter=flt)
        no = read(server, key, "/metrics", filter=negation)
        assert yes["events"] + no["events"] == total["events"]
        assert yes["pageviews"] + no["pageviews"] == total["pageviews"]
        series = read(server, key, "/metrics/timeseries", interval="hour", filter=flt)["points"]
        assert sum(p["events"] for p in series) == yes["events"]
        by_name = read(server, key, "/metrics/breakdown", by="event", filter=flt)["rows"]
        assert sum(r["events"] for r in by_name) == yes["events"]
        by_source = read(server, key, "/metrics/breakdown", by="source", filter=flt)["rows"]
        assert sum(r["sessions"] for r in by_source) == yes["sessions"]
