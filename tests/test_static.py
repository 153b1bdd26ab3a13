"""grader/judge/static.py's rule for host syncs on branches that run on CUDA only: a CPU never runs them, so the
source is the only evidence there."""

import textwrap

from grader.judge.static import cuda_only_host_syncs


def lines_of(source: str, entrypoint: str = "train_step", **kw) -> list[int]:
    return [f.line for f in cuda_only_host_syncs(textwrap.dedent(source), entrypoint, **kw)]


def test_a_synchronize_under_a_cuda_test_is_found_at_its_line():
    assert lines_of("""
        def train_step(loss, device_type):
            if device_type == "cuda":
                torch.cuda.synchronize()
    """) == [4]


def test_the_else_of_a_cpu_test_is_the_cuda_branch():
    assert lines_of("""
        def train_step(loss, device_type):
            if device_type == "cpu":
                pass
            else:
                loss.item()
            if not torch.cuda.is_available():
                loss.cpu()
    """) == [6]


def test_a_read_that_runs_on_every_device_is_left_to_the_census():
    assert (
        lines_of("""
        def train_step(loss, step):
            loss.item()
            if step % 100 == 0:
                print(loss.item())
    """)
        == []
    )


def test_helpers_the_step_calls_are_read_and_others_are_not():
    assert lines_of("""
        def log(loss):
            if loss.is_cuda:
                loss.to("cpu")

        def unused(loss):
            if torch.cuda.is_available():
                loss.tolist()

        def train_step(loss):
            log(loss)
    """) == [4]


def test_a_wrapper_bound_in_the_entrypoints_place_is_read():
    """How grader/authoring/mutants.py wraps a reference: `globals()["train_step"] = entry`."""
    assert lines_of("""
        def train_step(x):
            return x

        def _wrap():
            G = globals()
            def entry(*args):
                if args[0].device.type == "cuda":
                    args[0].sum().item()
                return train_step(*args)
            G["train_step"] = entry
        _wrap()
    """) == [9]


def test_as_a_note_it_is_info_level():
    found = cuda_only_host_syncs(
        'def train_step(l, d):\n    if d == "cuda":\n        l.item()\n', "train_step", note=True
    )
    assert [(f.id, f.severity) for f in found] == [("host_sync_cuda_only", "info")]
    assert "harmless for correctness" in found[0].message


def test_a_device_written_as_a_literal_is_named_outside_a_branch_that_tests_the_device():
    from grader.judge.static import hardcoded_devices

    source = (
        "import torch\n"
        "mesh = init_device_mesh('cpu', (2,))\n"
        "def step(device_type, x):\n"
        "    scaler = torch.amp.GradScaler(device='cuda:0')\n"
        "    if device_type == 'cuda':\n"
        "        torch.autocast('cuda')\n"
        "    with torch.autocast(device_type, dtype=x):\n"
        "        torch.autocast('cuda' if x else 'cpu')\n"
    )
    found = [
        (f.line, f.text["message"]["key"], f.text["message"]["params"]["device"]) for f in hardcoded_devices(source)
    ]
    assert found == [(2, "hardcoded_device.mesh", "cpu"), (4, "hardcoded_device.scaler", "cuda:0")]


def test_a_literal_device_on_an_autocast_that_turns_it_off_is_not_said_to_run_the_step_in_float32():
    from grader.judge.static import hardcoded_devices

    source = "import torch\n@torch.autocast('cpu', enabled=False)\ndef mix(m, h):\n    return m(h.float())\n"
    (found,) = hardcoded_devices(source)
    assert (found.line, found.text["message"]["key"]) == (2, "hardcoded_device.autocast_off")
    assert "float32" not in found.message


def test_an_and_with_a_cuda_term_runs_on_cuda_only_but_the_host_syncs_check_does_not_read_it():
    import ast

    from grader.judge.static import cuda_only_side

    def side(test: str):
        return cuda_only_side(ast.parse(test, mode="eval").body)

    assert side("x.is_cuda and verbose") is True and side("not (x.is_cuda and verbose)") is False
    assert side("x.is_cuda or verbose") is None and side("verbose and device == 'cpu'") is None
    # "every step" would not be true of a branch that also needs `verbose`: the step's host-sync rule keeps to
    # plain device tests (grader/judge/unexercised.py says the rest as notes where it did not run)
    found = lines_of("""
        def train_step(loss, x, verbose):
            if x.is_cuda and verbose:
                torch.cuda.synchronize()
    """)
    assert found == []


def test_a_deprecated_spelling_is_named_as_written():
    import ast

    from grader.judge.static import visited

    source = "from torch.cuda.amp import GradScaler\nimport torch\nwith torch.cpu.amp.autocast():\n    pass\n"
    said = {f.line: f.message for f in visited(ast.parse(source)) if f.id == "deprecated_api"}
    assert said == {
        1: "torch.cuda.amp.GradScaler is a deprecated spelling",
        3: "torch.cpu.amp.autocast is a deprecated spelling",
    }
