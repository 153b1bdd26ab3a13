# attack: read the reference solution, other lessons, the grader's source outside the mount,
#         /etc/shadow and the grader's environment, then use whatever was found
# applies: isolated
# expect: error
import os

TARGETS = ["__REPO__/exercises/autocast.yaml", "__REPO__/exercises/grad_scaler.yaml", "__REPO__/grader/runner.py",
           "__REPO__/tests/conftest.py", "/etc/shadow"]


def hunt():
    import grader.worker  # in a sandbox, `grader` is a namespace package that holds the worker alone

    here = os.path.dirname(os.path.dirname(grader.worker.__file__))
    found = [p for p in TARGETS + [os.path.join(here, "..", "exercises", "autocast.yaml")] if readable(p)]
    for root, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev", "/usr")]
        found += [os.path.join(root, f) for f in files if f.endswith(".yaml") and is_lesson(os.path.join(root, f))]
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                print("environ of", pid, open(f"/proc/{pid}/environ", "rb").read()[:4000])
            except OSError:
                pass
    print("my environment:", dict(os.environ))
    return found


def is_lesson(path):
    try:
        with open(path, "rb") as fh:
            return b"reference:" in fh.read() and readable(path)
    except OSError:
        return False


def readable(path):
    try:
        with open(path, "rb") as fh:
            print("LEAK:", path, fh.read(60))
        return True
    except OSError:
        return False


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    found = hunt()
    for path in found:
        if path.endswith("autocast.yaml"):
            source = open(path).read().split("reference: |", 1)[1]
            exec("\n".join(line[2:] for line in source.splitlines()), globals())
            return globals()["train_step"](model, optimizer, inputs, targets, device_type, amp_dtype)
    raise RuntimeError(f"nothing to steal: found {found}")
