# attack: write outside the temporary folder: the grader's code, the project, PyTorch's files, the code folder
# (A write may land in the sandbox's own private /tmp when the project lives under /tmp; the test checks
# the host's files, which is what matters.)
# applies: isolated
# expect: error
import os

import torch


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    import grader.worker  # in a sandbox, `grader` is a namespace package that holds the worker alone

    targets_ = ["__REPO__/canary-__MARKER__", os.path.join(os.path.dirname(os.path.dirname(grader.worker.__file__)), "canary-__MARKER__.py"),
                os.path.join(os.path.dirname(torch.__file__), "canary-__MARKER__.py"), os.getcwd() + "/canary",
                "/usr/canary-__MARKER__", "/canary-__MARKER__"]
    written = []
    for path in targets_:
        try:
            with open(path, "w") as fh:
                fh.write("LEAK")
            written.append(path)
            print("wrote", path)  # into the host? the test looks for the file there
        except OSError as exc:
            print("cannot write", path, exc)
    with open("/tmp/allowed.txt", "w") as fh:  # the one writable place
        fh.write("fine")
    raise RuntimeError(f"wrote {written}")
