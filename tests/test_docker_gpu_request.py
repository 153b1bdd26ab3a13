"""Which GPU the Docker sandbox asks the engine for. A worker started for one GPU of the host
(deploy/amp-dojo-worker@.service: CUDA_VISIBLE_DEVICES=%i) sees that GPU as its cuda:0, while the engine names
the host's GPUs: the request must carry the host's name for it, or every worker's containers land on GPU 0. The
engine here is a stand-in that records what a container was created with (a GPU host runs the real one:
scripts/gpu-check)."""

from __future__ import annotations

import pytest

from grader.sandboxes.docker_sandbox import DockerLauncher
from grader.sandboxes.limits import Limits


class Created(Exception):
    pass


class RecordingEngine:
    def __init__(self):
        self.containers = self
        self.kwargs = None

    def create(self, image, command, **kwargs):
        self.kwargs = kwargs
        raise Created


def requested_gpu(device: str, tmp_path) -> list[str] | None:
    launcher = object.__new__(DockerLauncher)
    launcher.limits, launcher.image, launcher.engine, launcher.owner = Limits(), "img", RecordingEngine(), "h:1"
    with pytest.raises(Created):
        launcher._start(device, tmp_path)
    requests = launcher.engine.kwargs["device_requests"]
    return None if requests is None else [gpu for r in requests for gpu in r["DeviceIDs"]]


@pytest.mark.parametrize(
    ("visible", "device", "host_gpu"),
    [
        ("1", "cuda", "1"),  # the template unit's worker for the host's second GPU
        ("2,3", "cuda:1", "3"),
        ("GPU-5d1e0c4a", "cuda:0", "GPU-5d1e0c4a"),  # a UUID passes through: the engine takes either
    ],
)
def test_a_worker_limited_to_some_gpus_requests_the_hosts_name_for_its_device(
    monkeypatch, tmp_path, visible, device, host_gpu
):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert requested_gpu(device, tmp_path) == [host_gpu]


def test_a_worker_that_sees_every_gpu_requests_its_own_index(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert requested_gpu("cuda:2", tmp_path) == ["2"]
    assert requested_gpu("cpu", tmp_path) is None
