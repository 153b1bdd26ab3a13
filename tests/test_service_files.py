"""The systemd units in deploy/ (docs/operations.md#service-files): they parse (`systemd-analyze verify`, which
reports unknown keys and bad values but still exits 0 for them, so its output must be empty), and the worker's
hardening leaves both sandboxes what they need. verify also wants each ExecStart program to exist: the copies
verified here run a stub in place of /opt/amp-dojo/.venv/bin/amp-dojo, nothing else changed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
PROGRAM = "/opt/amp-dojo/.venv/bin/amp-dojo"
UNITS = ["amp-dojo-web.service", "amp-dojo-worker@.service"]


def settings(unit: str) -> dict[str, list[str]]:
    """Key -> every value it is given in the unit (comments left out)."""
    out: dict[str, list[str]] = {}
    for line in (DEPLOY / unit).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(key.strip(), []).append(value.strip())
    return out


@pytest.fixture
def units_with_a_stub_program(tmp_path) -> Path:
    stub = tmp_path / "amp-dojo"
    stub.write_text("#!/bin/sh\n")
    stub.chmod(0o755)
    for unit in UNITS:
        text = (DEPLOY / unit).read_text()
        assert re.search(rf"^ExecStart={re.escape(PROGRAM)} ", text, re.M), unit
        (tmp_path / unit).write_text(text.replace(PROGRAM, str(stub)))
    # a template is verified as itself and as an instance, where %i has a value
    shutil.copy(tmp_path / "amp-dojo-worker@.service", tmp_path / "amp-dojo-worker@1.service")
    return tmp_path


@pytest.mark.parametrize("unit", [*UNITS, "amp-dojo-worker@1.service"])
def test_systemd_accepts_every_line_of_the_units(units_with_a_stub_program, unit):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian's systemd package; scripts/system-deps)")
    done = subprocess.run(
        [analyze, "verify", str(units_with_a_stub_program / unit)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    ours = [line for line in (done.stdout + done.stderr).splitlines() if "amp-dojo" in line]
    assert ours == [], "\n".join(ours)


def test_each_worker_grades_on_its_own_gpu_with_its_own_device_locks():
    worker = settings("amp-dojo-worker@.service")
    env = worker["Environment"]
    assert "CUDA_VISIBLE_DEVICES=%i" in env
    assert any(e.startswith("AMP_DOJO_LOCK_DIR=") and "%i" in e for e in env)
    # the docker sandbox's scratch folders must be where the engine sees them: not in PrivateTmp's /tmp
    assert "TMPDIR=/run/amp-dojo-worker-%i" in env and worker["RuntimeDirectory"] == ["amp-dojo-worker-%i"]


def test_the_worker_stops_gracefully_without_signalling_the_sandboxes():
    worker = settings("amp-dojo-worker@.service")
    assert worker["KillSignal"] == ["SIGINT"]  # the queue consumer's graceful stop
    assert worker["KillMode"] == ["mixed"]  # to the worker alone: learner code never sees it


# What would break a sandbox under the worker's unit, and why: bwrap makes user, PID, net, mount, IPC and UTS
# namespaces (RestrictNamespaces, PrivateUsers), mounts a /proc of its own, which the kernel refuses in a user
# namespace once parts of the host's /proc are covered (ProtectKernelTunables, ProtectKernelLogs, ProtectProc,
# ProcSubset), sets the sandbox's hostname (ProtectHostname blocks sethostname), and calls mount, pivot_root and
# unshare (SystemCallFilter, inherited by the sandbox); the GPU's device nodes are needed by both sandboxes
# (PrivateDevices, and ProtectClock, which turns the device policy to an allow-list without them); JIT compilers
# in the sandbox map memory writable and executable (MemoryDenyWriteExecute).
BREAKS_A_SANDBOX = [
    "RestrictNamespaces",
    "PrivateUsers",
    "ProtectKernelTunables",
    "ProtectKernelLogs",
    "ProtectProc",
    "ProcSubset",
    "ProtectHostname",
    "SystemCallFilter",
    "PrivateDevices",
    "ProtectClock",
    "DevicePolicy",
    "MemoryDenyWriteExecute",
]


def test_the_worker_s_hardening_leaves_the_sandboxes_what_they_need():
    worker = settings("amp-dojo-worker@.service")
    assert [key for key in BREAKS_A_SANDBOX if key in worker] == []
    assert worker["NoNewPrivileges"] == ["yes"] and worker["ProtectSystem"] == ["strict"]
    assert "AF_NETLINK" in worker["RestrictAddressFamilies"][0]  # bwrap brings up the sandbox's loopback


def test_both_run_as_the_dedicated_user_with_the_shared_settings_file():
    for unit in UNITS:
        s = settings(unit)
        assert s["User"] == ["amp-dojo"] and s["EnvironmentFile"] == ["-/etc/amp-dojo/amp-dojo.env"]
        assert s["Restart"] == ["on-failure"]
