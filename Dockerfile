# The grading image: Python, PyTorch, the grader's worker and the C++ compiler inductor needs for a learner's
# torch.compile on a CPU (g++, Python's headers: in the Debian base scripts/build-image makes), nothing else.
# Reference solutions and results never enter it: the grader passes each
# worker its own code and the public part of the exercise at run time.
#
# On a GPU server with internet (default base, PyTorch already inside):
#     docker build -t amp-dojo-grader .
# Offline (our CI): scripts/build-image makes a Debian base with debootstrap and
# puts the PyTorch wheel and its dependencies in docker/wheels/.
ARG BASE_IMAGE=pytorch/pytorch:2.7.1-cuda12.6-cudnn9-runtime
FROM ${BASE_IMAGE}

# When set (e.g. torch==2.13.0), PyTorch is installed from docker/wheels/ into /opt/venv, with Accelerate (pinned
# as in pyproject.toml: the Accelerate lesson's code imports it) from the same folder; otherwise Accelerate is
# installed into the base image's Python.
ARG TORCH_SPEC=
ARG ACCELERATE_SPEC=accelerate==1.15.0
# torchao (pinned as in pyproject.toml: the fp8_training lesson's code imports it; 0.18 wants torch>=2.11)
ARG TORCHAO_SPEC=torchao==0.18.0
COPY docker/wheels/ /tmp/wheels/
RUN set -eu; \
    if [ -n "$TORCH_SPEC" ]; then \
        python3 -m venv /opt/venv; \
        /opt/venv/bin/pip install --no-cache-dir --no-index --find-links /tmp/wheels "$TORCH_SPEC" "$ACCELERATE_SPEC" "$TORCHAO_SPEC"; \
    else \
        python3 -m pip install --no-cache-dir "$ACCELERATE_SPEC" "$TORCHAO_SPEC"; \
    fi; \
    rm -rf /tmp/wheels

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/opt/amp-dojo \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# The in-sandbox package alone (grader/worker/): in the image `grader` is a namespace package holding it.
COPY grader/worker/ /opt/amp-dojo/grader/worker/
RUN python3 -c "import torch, accelerate, torchao.float8, grader.worker.serve; print('torch', torch.__version__, 'accelerate', accelerate.__version__)"

# The hash of the in-sandbox package's code, so the host can tell a stale image from a current one.
ARG GRADER_HASH=unknown
LABEL org.amp-dojo.grader-hash=${GRADER_HASH}
USER 65534:65534
WORKDIR /sandbox
