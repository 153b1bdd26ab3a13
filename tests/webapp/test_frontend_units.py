"""The browser code's own unit tests (webapp/frontend/test/*.test.js: the page logic's stream, cancel, drafts
and quiz, and the chart maths), run by node's built-in test runner. They import only webapp/frontend/src/page/
and src/scale.js, so they need node and nothing from npm. Without node they are skipped, unless
AMP_DOJO_REQUIRE_BROWSER is set (CI), which makes that a failure, as for the browser tests."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FRONTEND = Path(__file__).resolve().parents[2] / "webapp" / "frontend"
REQUIRE = bool(os.environ.get("AMP_DOJO_REQUIRE_BROWSER"))
TIMEOUT_S = 120


def test_the_frontend_unit_tests_pass_in_node():
    node = shutil.which("node")
    if node is None:
        if REQUIRE:
            pytest.fail("AMP_DOJO_REQUIRE_BROWSER is set but node is not installed", pytrace=False)
        pytest.skip("node is not installed (set AMP_DOJO_REQUIRE_BROWSER=1 to make this a failure)")
    # The files by name: node 21 and later take --test arguments as globs, not directories. TAP: the summary
    # lines below, whatever reporter this node would pick by default.
    files = sorted(str(p.relative_to(FRONTEND)) for p in (FRONTEND / "test").glob("*.test.js"))
    assert len(files) >= 5, files
    try:
        run = subprocess.run(
            [node, "--test", "--test-reporter=tap", *files],
            cwd=FRONTEND,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env={**os.environ, "NO_COLOR": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"node --test ran past {TIMEOUT_S} s:\n{exc.stdout or ''}{exc.stderr or ''}", pytrace=False)
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"node --test failed (exit {run.returncode}):\n{output}"
    assert "# fail 0" in output and "# pass 0" not in output, output
