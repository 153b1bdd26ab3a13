"""Fixtures for the end-to-end browser tests: the real app (web server and one
grading worker, as subprocesses on a loopback port) and a headless Chromium
driven by Playwright's sync API.

The browser is the system's Chromium (/usr/bin/chromium, or AMP_DOJO_CHROMIUM):
Playwright's own browser download is never used. Without it the tests are
skipped, unless AMP_DOJO_REQUIRE_BROWSER is set (CI), which makes them fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tutor_model import model_server  # noqa: F401 - the tutor's model server (tests/tutor_model.py)

from .amp_dojo_live import CHROMIUM, REQUIRE_BROWSER, ROOT, LiveApp

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
DESKTOP = {"width": 1366, "height": 768}  # a common laptop screen
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def viewport_page(request, browser, live_app, js_errors):
    """page_in(viewport) -> a page in a fresh context of that size (a phone is mobile and touch)."""
    contexts = []

    def _open(viewport: dict):
        phone = viewport["width"] < 600
        context = browser.new_context(base_url=live_app.url, viewport=viewport, is_mobile=phone, has_touch=phone)
        context.set_default_timeout(15_000)
        contexts.append(context)
        pg = context.new_page()
        pg.on("pageerror", lambda exc: js_errors.append(f"pageerror: {exc}"))
        pg.on(
            "console", lambda msg: js_errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None
        )
        return pg

    try:
        yield _open
    finally:
        for context in contexts:
            context.close()


def _no_browser(reason: str):
    if REQUIRE_BROWSER:
        pytest.fail(f"AMP_DOJO_REQUIRE_BROWSER is set but {reason}", pytrace=False)
    pytest.skip(f"{reason} (set AMP_DOJO_REQUIRE_BROWSER=1 to make this a failure)")


def shared_trusted_runs(tmp_path_factory) -> Path:
    """One folder of trusted runs (FP32 baseline, reference) for every app of this test run, on every xdist
    worker: a lesson's trusted runs depend on nothing a test does, and computing them again for each test
    module took minutes of emulated bfloat16 on CPUs without it. Writes are atomic (DirectoryStore)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder = base / "e2e-trusted-runs"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def live_app(tmp_path_factory):
    """`amp-dojo serve` + one `amp-dojo worker`: temp database and queue, device cpu,
    sandbox bwrap (local, explicitly allowed, only where bubblewrap cannot run); trusted runs shared."""
    app = LiveApp(
        tmp_path_factory.mktemp("e2e-app"), settings={"TRUSTED_RUNS": str(shared_trusted_runs(tmp_path_factory))}
    )
    if app.sandbox_note:
        print(f"e2e: bwrap unavailable ({app.sandbox_note}); grading with SANDBOX=local")
    app.start(timeout=90)
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        _no_browser(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright package is not installed")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def js_errors():
    """Console errors and uncaught exceptions of the test's page, as strings."""
    return []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test item, so fixtures can tell a failed test."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def page(request, browser, live_app, js_errors):
    """A fresh browser context (a new anonymous learner, empty localStorage) on the live app.
    When the test fails: a screenshot artifacts/screenshots/failed-<test>.png and the app's logs."""
    context = browser.new_context(base_url=live_app.url, viewport=DESKTOP)
    context.set_default_timeout(15_000)
    pg = context.new_page()
    pg.on(
        "console",
        lambda msg: (
            js_errors.append(f"console.{msg.type}: {msg.text} @ {msg.location}") if msg.type == "error" else None
        ),
    )
    pg.on("pageerror", lambda exc: js_errors.append(f"pageerror: {exc}"))
    try:
        yield pg
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(SCREENSHOTS / f"failed-{request.node.name}.png"))
            print(f"JS errors: {js_errors}\n{live_app.logs()}")
    finally:
        context.close()


@pytest.fixture(scope="session")
def screenshot():
    """screenshot(page, name, full_page=False) -> path: a PNG under artifacts/screenshots/.
    The lesson page's editor and results column is sticky and scrolls by itself, so
    lesson pages are shot as the viewport (after scrolling what matters into view)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def _shot(pg, name: str, full_page: bool = False) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        pg.screenshot(path=str(path), full_page=full_page)
        return path

    return _shot
