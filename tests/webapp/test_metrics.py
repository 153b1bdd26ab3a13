"""Prometheus metrics at /metrics: the series an admin needs (queue depth, gradings by lesson and status,
grading seconds, workers alive, results stored, refusals by reason), bounded label sets, summed over app
processes in multiprocess mode, and served only to whom METRICS_ALLOW and METRICS_TOKEN let in."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from webapp_testing import base_config, grade_as

from grader.lesson.loader import load_all
from webapp import create_app, metrics, workers

ROOT = Path(__file__).resolve().parents[2]
STARTER = load_all()["autocast"].starter
SERIES = [
    "amp_dojo_queue_depth",
    "amp_dojo_queue_oldest_seconds",
    "amp_dojo_workers_alive",
    "amp_dojo_results_stored",
    'amp_dojo_gradings_total{lesson="autocast",status="pass"}',
    'amp_dojo_grading_seconds_bucket{le="1.0",lesson="autocast"}',
    'amp_dojo_refusals_total{reason="too_large"}',
]


def scrape(client, **kwargs):
    return client.get("/metrics", **kwargs)


def test_metrics_serve_every_series_after_a_grading(app, client, submit):
    sid = submit(client, STARTER).get_json()["id"]
    assert submit(client, "x" * (int(app.config["MAX_CODE_BYTES"]) + 1)).status_code == 413
    grade_as(app, sid, "pass")
    workers.beat(app.extensions["amp_dojo_queue"], "w1", workers.Identity("h", 1, "cpu", "bwrap"), [])
    response = scrape(client)
    assert response.status_code == 200 and response.content_type.startswith("text/plain")
    text = response.get_data(as_text=True)
    missing = [name for name in SERIES if name not in text]
    assert not missing, missing
    values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if line[:1] != "#"}
    assert values["amp_dojo_workers_alive"] == 1 and values["amp_dojo_results_stored"] == 1
    assert values["amp_dojo_queue_depth"] == 0


def test_metrics_are_refused_to_a_client_that_is_not_on_this_machine(client):
    assert scrape(client).status_code == 200  # the test client talks from 127.0.0.1
    assert scrape(client, environ_base={"REMOTE_ADDR": "10.1.2.3"}).status_code == 404
    # relayed by a proxy on this machine: loopback to the app, but a client from anywhere
    assert scrape(client, headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 404


def test_metrics_take_a_bearer_token_from_anywhere_and_refuse_a_wrong_one(make_app):
    client = make_app(METRICS_ALLOW="none", METRICS_TOKEN="s3cret-token").test_client()
    far = {"REMOTE_ADDR": "10.1.2.3"}
    assert scrape(client).status_code == 404  # not even from loopback without the token
    assert scrape(client, environ_base=far, headers={"Authorization": "Bearer wrong"}).status_code == 404
    assert scrape(client, environ_base=far, headers={"Authorization": "s3cret-token"}).status_code == 404
    assert scrape(client, environ_base=far, headers={"Authorization": "Bearer s3cret-token"}).status_code == 200


@pytest.mark.parametrize(
    ("lesson", "label"), [("autocast", "autocast"), ("grad_scaler", "grad_scaler"), ("my_own_lesson", "other")]
)
def test_a_lesson_label_is_a_shipped_lesson_or_other(lesson, label):
    assert metrics.lesson_label(lesson) == label


def test_refusal_reasons_and_statuses_are_a_bounded_set():
    from webapp.store import STORAGE_MESSAGES

    assert metrics.reason_of(429, "The grading queue is full ({n} submissions are waiting)") == "queue_full"
    assert metrics.reason_of(429, "{n} of your submissions are still waiting or being graded") == "waiting"
    assert {metrics.reason_of(429, m) for m in STORAGE_MESSAGES.values()} == {"storage"}
    assert metrics.reason_of(429, "Too many runs in a short time: run again in {n} s") == "rate_limit"
    assert metrics.reason_of(418, "whatever a client sends") == "other"
    metrics.graded("autocast", "a status made up by a worker", 1.0)
    statuses = {s.labels["status"] for m in metrics.GRADINGS.collect() for s in m.samples}
    assert statuses <= set(metrics.STATUSES)


SCRIPT = """
import sys
from webapp import metrics
from types import SimpleNamespace
from webapp.queue import make_huey
metrics.graded("autocast", "fail", 2.5)
if sys.argv[1] == "scrape":
    config = {"DATABASE": sys.argv[2], "WORKER_DEAD_AFTER_SECONDS": 15}
    print(metrics.exposition(config, SimpleNamespace(huey=make_huey(sys.argv[3]))).decode())
"""


def test_several_processes_sum_into_one_scrape_with_prometheus_multiproc_dir(tmp_path):
    """Each app process counts in its own files; a scrape answered by any of them sums them all."""
    app = create_app(base_config(tmp_path))  # SQLite only: what is tested is prometheus_client's side
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prom"), PYTHONPATH=str(ROOT))
    (tmp_path / "prom").mkdir()
    run = [sys.executable, "-c", SCRIPT]
    subprocess.run([*run, "count"], env=env, cwd=ROOT, check=True, timeout=120)
    scrape_args = [*run, "scrape", app.config["DATABASE"], app.config["QUEUE_URL"]]
    out = subprocess.run(scrape_args, env=env, cwd=ROOT, check=True, timeout=120, capture_output=True).stdout.decode()
    assert 'amp_dojo_gradings_total{lesson="autocast",status="fail"} 2.0' in out
    assert "amp_dojo_queue_depth 0.0" in out


def test_the_grafana_dashboard_asks_only_for_series_the_app_serves(client):
    import re

    families = set(re.findall(r"^# TYPE (amp_dojo_\w+)", scrape(client).get_data(as_text=True), re.M))
    served = families | {f"{name}{end}" for name in families for end in ("_total", "_bucket")}
    asked = set(re.findall(r"amp_dojo_\w+", (ROOT / "deploy" / "grafana-dashboard.json").read_text()))
    asked.discard("amp_dojo")  # the dashboard's own uid
    assert asked and asked <= served, asked - served
