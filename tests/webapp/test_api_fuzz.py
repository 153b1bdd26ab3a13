"""The API described by /api/openapi.json matches the app's routes, and no
request, however malformed, gets a 5xx: every operation of the document is
fuzzed with Hypothesis (odd path parameters, query values, headers, and JSON
or raw bodies, deeply nested ones included) through the app, on loopback,
with a bounded number of examples."""

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.openapi import document

DOC = document()
OPERATIONS = [(path, method) for path, item in DOC["paths"].items() for method in item]


def _openapi_path(rule: str) -> str:
    return re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule)


def test_the_openapi_document_describes_every_api_route_and_no_other(app, client):
    routes = {
        (_openapi_path(r.rule), m.lower())
        for r in app.url_map.iter_rules()
        if r.rule.startswith("/api/")
        for m in r.methods
        if m not in ("HEAD", "OPTIONS")
    }
    assert routes == set(OPERATIONS)
    served = client.get("/api/openapi.json")
    assert served.status_code == 200 and served.get_json()["openapi"].startswith("3.")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
bodies = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"code": st.text(max_size=60)}, optional={"x": json_values}).map(
        lambda v: json.dumps(v).encode()
    ),
    st.fixed_dictionaries(
        {}, optional={"choice": json_values | st.integers(-3, 5), "attempt": json_values | st.integers(-2, 3)}
    ).map(lambda v: json.dumps(v).encode()),
    st.integers(1, 3000).map(lambda n: (b"[" * n) + (b"]" * n)),
    st.binary(max_size=60),
    st.just(b'{"code": "\\ud800 print(1)"}'),
)
# Mostly valid path parameters, so the bodies and queries reach the code behind the routing.
segments = st.one_of(
    st.just("autocast"),
    st.just("autocast"),
    st.just("autocast"),
    st.sampled_from(["grad_scaler", "0", "-1", "99999999999999999999", "%00", ".."]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=20),
)
query_values = st.one_of(
    st.sampled_from(["", "0", "-1", "²", "1e9", "x" * 5000, "9" * 5000, "it", "zz"]), st.text(max_size=20)
)


def _fill(path: str, values: dict) -> str:
    from urllib.parse import quote

    return re.sub(r"\{(\w+)\}", lambda m: quote(str(values[m.group(1)]), safe=""), path)


@pytest.mark.parametrize("path,method", OPERATIONS, ids=[f"{m.upper()} {p}" for p, m in OPERATIONS])
def test_no_malformed_request_gets_a_server_error(make_app, path, method):
    app = make_app(STREAM_SECONDS=0.2)
    client = app.test_client()
    token = client.get("/api/session").get_json()["csrf_token"]

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(
        params=st.fixed_dictionaries(
            {
                "lesson_id": segments,
                "sid": segments,
                "index": st.one_of(st.integers(0, 2), st.integers(0, 2), st.integers(-5, 50), segments),
            }
        ),
        query=st.dictionaries(st.sampled_from(["after", "lang", "last_event_id", "next"]), query_values, max_size=3),
        body=bodies,
        send_token=st.sampled_from([True, True, True, False]),
        content_type=st.sampled_from(["application/json"] * 4 + ["text/plain", "application/x-www-form-urlencoded"]),
        last_event=st.one_of(st.none(), query_values.filter(lambda v: v.isascii() and "\n" not in v and "\r" not in v)),
    )
    def probe(params, query, body, send_token, content_type, last_event):
        headers = {"Content-Type": content_type}
        if send_token:
            headers["X-CSRF-Token"] = token
        if last_event is not None:
            headers["Last-Event-ID"] = last_event
        url = _fill(path, params)
        response = client.open(url, method=method.upper(), query_string=query, data=body, headers=headers)
        assert response.status_code < 500, (method, url, query, body[:80], response.get_data(as_text=True)[:300])
        if response.status_code >= 400 and response.status_code != 404 or url.startswith("/api/"):
            if response.mimetype != "text/event-stream":
                assert response.is_json, (url, response.status_code, response.get_data(as_text=True)[:200])
        response.close()

    probe()
