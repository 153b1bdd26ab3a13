# The grading image: Python, PyTorch, the grader's worker and the C++ compiler inductor needs for a learner's
# torch.compile (g++ and Python's headers), nothing else. Reference solutions and results never enter it: the
# grader passes each worker its own code and the public part of the exercise at run time.
#
# On a GPU server with internet, the defaults below build it from PyPI alone, with CI's versions (PyPI's Linux
# x86_64 torch wheel is the CUDA 13 build: it brings the nvidia-*-cu13 libraries and triton; the host needs an
# NVIDIA driver of branch R580 or newer, docs/operations.md):
#     docker build -t amp-dojo-grader --build-arg GRADER_HASH=... .
# Offline (our CI): scripts/build-image makes a Debian base with debootstrap (BASE_IMAGE), puts the wheels in
# docker/wheels/ and passes OFFLINE=1, so that pip reads that folder alone.
#
# tests/test_dockerfile.py holds these defaults to pyproject.toml's pins: change them together.
# Python 3.11, as Debian bookworm's python3 (the offline base) and the wheels scripts/build-image fetches.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ARG TORCH_SPEC=torch==2.13.0
# Accelerate and torchao as pyproject.toml pins them: the lessons' learner code imports them inside the sandbox
# (torchao: the fp8_training lesson; 0.18 wants torch>=2.11).
ARG ACCELERATE_SPEC=accelerate==1.15.0
ARG TORCHAO_SPEC=torchao==0.18.0
# 1: install from docker/wheels/ alone (no index); empty: from PyPI, docker/wheels/ being empty.
ARG OFFLINE=
COPY docker/wheels/ /tmp/wheels/
# A base without a C++ compiler (the default python image) gets Debian's; the offline base has it already, and
# no network to fetch it with.
RUN set -eu; \
    if ! command -v g++ >/dev/null; then \
        apt-get update; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc g++ libc6-dev; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    python3 -m venv /opt/venv; \
    if [ "$OFFLINE" = 1 ]; then where="--no-index --find-links /tmp/wheels"; else where=""; fi; \
    /opt/venv/bin/pip install --no-cache-dir $where "$TORCH_SPEC" "$ACCELERATE_SPEC" "$TORCHAO_SPEC"; \
    rm -rf /tmp/wheels

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/opt/amp-dojo \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The in-sandbox package alone (grader/worker/): in the image `grader` is a namespace package holding it.
COPY grader/worker/ /opt/amp-dojo/grader/worker/
# Fails the build on a missing piece: PyTorch, the lessons' libraries, the worker, and what inductor compiles
# with (g++ and the Python.h of the venv's Python).
RUN python3 -c "import os, sysconfig, shutil, torch, accelerate, torchao.float8, grader.worker.serve; \
assert shutil.which('g++'), 'no g++'; \
assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')), 'no Python.h'; \
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'accelerate', accelerate.__version__)"

# The hash of the in-sandbox package's code, so the host can tell a stale image from a current one.
ARG GRADER_HASH=unknown
LABEL org.amp-dojo.grader-hash=${GRADER_HASH}
USER 65534:65534
WORKDIR /sandbox
