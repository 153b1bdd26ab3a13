"""The real server, on loopback: `amp-dojo serve` (waitress with the limits of
webapp/cli.py) keeps answering while a hundred-odd clients send their requests
slowly, and the nginx configuration in deploy/nginx.conf passes a page and a
live-result stream through (skipped where nginx is not installed).

Every process here is started by the test, on 127.0.0.1 and free ports, and
stopped by it; every loop is bounded."""

import http.client
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from webapp import cli

ROOT = Path(__file__).resolve().parents[2]
SLOW_CLIENTS = 110  # waitress's default connection_limit is 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str = "/", timeout: float = 3.0, headers: dict | None = None):
    """(status, headers, body) of one plain request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response, response.read()
    finally:
        conn.close()


@pytest.fixture
def served(tmp_path):
    """`amp-dojo serve` in a process of its own; yields its port."""
    port = free_port()
    env = {
        **os.environ,
        "AMP_DOJO_DATABASE": str(tmp_path / "app.sqlite3"),
        "AMP_DOJO_QUEUE_URL": f"sqlite:///{tmp_path / 'queue.sqlite3'}",
        "AMP_DOJO_SECRET_KEY": "test",
        "AMP_DOJO_SANDBOX": "local",
        "AMP_DOJO_ALLOW_LOCAL_SANDBOX": "true",
        "AMP_DOJO_DEVICE": "cpu",
        "AMP_DOJO_TRUSTED_PROXIES": "1",
        "AMP_DOJO_WARM_AT_START": "false",
        "AMP_DOJO_COLLECT_INTERVAL": "0",
    }
    env.pop("AMP_DOJO_CONFIG", None)
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "webapp.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if get(port, "/api/session", timeout=1)[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
        yield port
    finally:
        stop(proc, 15)
        log.close()


def stop(proc: subprocess.Popen, timeout: float) -> None:
    """SIGTERM, then SIGKILL if it has not ended within `timeout`."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_waitress_gets_the_limits_of_the_settings():
    options = cli.waitress_options(
        {
            "SERVER_CONNECTION_LIMIT": 500,
            "SERVER_CHANNEL_TIMEOUT": 30,
            "SERVER_MAX_HEADER_BYTES": 32768,
            "MAX_CONTENT_LENGTH": 458752,
        },
        threads=16,
    )
    assert options["connection_limit"] == 500 and options["channel_timeout"] == 30
    assert options["max_request_body_size"] == 458752 and options["asyncore_use_poll"] is True
    assert options["cleanup_interval"] <= 10
    from waitress.adjustments import Adjustments

    Adjustments(**options)  # every name is one waitress knows


def test_a_normal_client_gets_a_page_while_110_clients_send_their_requests_slowly(served):
    slow, stop = [], threading.Event()
    try:
        for _ in range(SLOW_CLIENTS):
            s = socket.create_connection(("127.0.0.1", served), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(s)

        def trickle():  # a byte now and then: never idle, never a complete request
            for _ in range(40):
                if stop.wait(0.25):
                    return
                for s in slow:
                    try:
                        s.sendall(b"a")
                    except OSError:
                        pass

        sender = threading.Thread(target=trickle)
        sender.start()
        time.sleep(0.5)
        started = time.monotonic()
        status, _response, body = get(served, "/", timeout=5)
        elapsed = time.monotonic() - started
        assert status == 200 and b"<html" in body
        assert elapsed < 2.0, elapsed
    finally:
        stop.set()
        for s in slow:
            s.close()


def _nginx() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def nginx_config(tmp_path: Path, listen: int, upstream: int) -> Path:
    """deploy/nginx.conf as it is, its two addresses replaced, inside a main file that keeps nginx's pid,
    logs and buffers under tmp_path."""
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "listen 80;" in site and "server 127.0.0.1:8000;" in site
    site = site.replace("listen 80;", f"listen 127.0.0.1:{listen};").replace(
        "server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};"
    )
    (tmp_path / "site.conf").write_text(site)
    temp = "\n".join(
        f"    {kind}_temp_path {tmp_path / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = tmp_path / "nginx.conf"
    main.write_text(f"""{"user root;" if os.geteuid() == 0 else ""}
daemon off;
worker_processes 1;
pid {tmp_path / "nginx.pid"};
error_log {tmp_path / "error.log"} warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
{temp}
    include {tmp_path / "site.conf"};
}}
""")
    return main


@pytest.mark.skipif(_nginx() is None, reason="nginx is not installed (apt-get install nginx-light)")
def test_nginx_with_the_checked_in_configuration_passes_a_page_and_a_live_stream(served, tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [_nginx(), "-p", str(tmp_path), "-c", str(nginx_config(tmp_path, port, served))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _response, body = get(port, "/", timeout=2)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
                time.sleep(0.2)
        assert status == 200 and b"<html" in body
        status, response, body = get(port, "/api/session")
        cookie = response.getheader("Set-Cookie").split(";")[0]
        token = json.loads(body)["csrf_token"]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request(
            "POST",
            "/api/lessons/autocast/submissions",
            body=json.dumps({"code": "x = 1\n"}),
            headers={"Cookie": cookie, "X-CSRF-Token": token, "Content-Type": "application/json"},
        )
        answer = conn.getresponse()
        submission = json.loads(answer.read())
        conn.close()
        assert answer.status == 202, submission
        stream = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        started = time.monotonic()
        stream.request("GET", submission["urls"]["stream"], headers={"Cookie": cookie})
        response = stream.getresponse()
        assert response.status == 200 and response.getheader("Content-Type").startswith("text/event-stream")
        lines = []
        while b"event: queued" not in b"".join(lines) and time.monotonic() - started < 5:
            lines.append(response.fp.readline())  # the stream stays open: it arrives unbuffered or not at all
        assert b"event: queued" in b"".join(lines), lines
        assert time.monotonic() - started < 5
        stream.close()
    finally:
        stop(proc, 10)


def start_nginx(served, tmp_path) -> tuple[subprocess.Popen, int]:
    """nginx with deploy/nginx.conf in front of `served`, answering; (process, port)."""
    port = free_port()
    proc = subprocess.Popen(
        [_nginx(), "-p", str(tmp_path), "-c", str(nginx_config(tmp_path, port, served))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            get(port, "/", timeout=2)
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(proc, 10)
                raise AssertionError(proc.stderr.read().decode()) from None
            time.sleep(0.2)


SLOW_BODY = b"POST /api/lessons/autocast/submissions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"


def refused_with_429(s: socket.socket) -> bool:
    """nginx answered 429 and closed (the reset that follows an unread body may come first: also refused)."""
    try:
        head = s.recv(64)
    except ConnectionResetError:
        return True
    return head.startswith(b"HTTP/1.1 429") or head == b""


@pytest.mark.skipif(_nginx() is None, reason="nginx is not installed (apt-get install nginx-light)")
def test_nginx_lets_each_address_trickle_only_twenty_bodies_so_a_new_client_still_gets_a_page(served, tmp_path):
    """Nine addresses each start 30 request bodies and send them a byte at a time: past 20 per address nginx
    answers 429 at once, so 270 such requests do not fill the test's 256 connections and a client from a tenth
    address gets its page (with 100 bodies per address allowed, all 270 were held and it got no answer)."""
    proc, port = start_nginx(served, tmp_path)
    slow: list[socket.socket] = []
    try:
        refused = {}
        for n in range(1, 10):
            address, mine = f"127.0.0.{n}", []
            for _ in range(30):
                s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(address, 0))
                s.sendall(SLOW_BODY)
                mine.append(s)
            time.sleep(0.3)
            readable, _, _ = select.select(mine, [], [], 0.5)
            refused[address] = sum(map(refused_with_429, readable))
            for s in readable:  # a refused client goes away (nginx drops one that does not within lingering_time)
                s.close()
            slow += [s for s in mine if s not in readable]
        assert set(refused.values()) == {10}, refused
        for s in slow:  # still sending
            try:
                s.sendall(b"x")
            except OSError:
                pass
        conn = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.20", 0))
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert conn.recv(64).startswith(b"HTTP/1.1 200")
        conn.close()
        assert get(port, "/signin")[0] == 200  # an address holding 20 bodies still gets pages (not counted)
    finally:
        for s in slow:
            s.close()
        stop(proc, 10)
