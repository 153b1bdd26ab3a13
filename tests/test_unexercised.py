"""The note beside a verdict that names the learner's lines a grading never ran (grader/judge/unexercised.py):
what it names, and that it never names a line that ran or one that compiles to nothing."""

import pytest

from grader.judge.unexercised import MAX_NOTES, lines_run, notes, skipped_blocks

STEP = '''def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    """One step."""
    global seen
    optimizer.zero_grad()
    if device_type == "cuda":
        x = 1
        if amp_dtype is None:
            y = 2
    else:
        x = 2
    try:
        pass
    finally:
        optimizer.step()
    total = (
        1
        + 2
    )
    return x


def helper(v):
    return v
'''


def _keys(found):
    return [(f.text["message"]["key"], f.line) for f in found]


def test_a_branch_for_another_device_is_one_block_named_by_its_condition():
    ran = {4, 5, 10, 13, 14, 17, 19}
    (block, helper) = skipped_blocks(STEP, ran)
    assert (block.first, block.last, block.condition, block.negated) == (6, 8, 'device_type == "cuda"', False)
    assert helper.whole_function and helper.function == "helper"


def test_the_else_branch_is_said_to_be_the_else():
    ran = {4, 5, 6, 7, 8, 13, 14, 17, 19}
    found = notes(STEP, ran, "cpu", "bfloat16")
    assert ("not_exercised.else", 10) in _keys(found)
    assert 'else of `if device_type == "cuda":`' in next(f.message for f in found if f.line == 10)


def test_lines_that_compile_to_nothing_or_report_a_later_line_are_never_named():
    # the docstring, `global`, `pass`, `try:` and the first line of a statement whose first event is on a later line
    ran = {4, 5, 6, 7, 8, 13, 14, 16, 19, 23}
    assert skipped_blocks(STEP, ran)[0].first == 10
    assert [b.first for b in skipped_blocks(STEP, ran)] == [10]


def test_nothing_is_said_where_the_worker_reported_no_line():
    assert notes(STEP, set(), "cpu", "bfloat16") == []


def test_many_blocks_end_in_a_count_of_the_rest():
    source = "".join(f"def f{i}(x):\n    return x\n\n\n" for i in range(MAX_NOTES + 3))
    found = notes(source, {1}, "cpu", "bfloat16")
    assert len(found) == MAX_NOTES
    assert found[-1].text["message"]["key"] == "not_exercised.more" and found[-1].text["message"]["params"]["n"] == 4


FP16 = """def train_step(model, optimizer, scaler, inputs, targets, device_type, amp_dtype):
    if amp_dtype == torch.float16:
        loss = model(inputs)
        loss.backward()
        scaler.step(optimizer)
    else:
        scaled = scaler.scale(model(inputs))
        scaled.backward()
        accelerator.backward(scaled)
        scaler.step(optimizer)
    return loss
"""


def test_a_float16_branch_that_did_not_run_is_read_for_an_unscaled_backward_and_a_missing_update():
    found = _keys(notes(FP16, {2, 7, 8, 9, 10, 11}, "cpu", "bfloat16"))
    assert ("not_exercised.unscaled", 4) in found and ("not_exercised.no_update", 5) in found


def test_a_scaled_name_or_a_library_backward_is_not_called_unscaled():
    found = _keys(notes(FP16, {2, 3, 4, 5, 11}, "cpu", "float16"))
    assert ("not_exercised.else", 7) in found
    assert not any(k == "not_exercised.unscaled" for k, _ in found)


def test_an_update_anywhere_in_the_file_is_an_update():
    source = FP16 + "\n\ndef finish(scaler):\n    scaler.update()\n"
    assert not any(k == "not_exercised.no_update" for k, _ in _keys(notes(source, {2, 7, 8, 9, 10, 11}, "cpu", "bf16")))


@pytest.mark.parametrize("reply", [[True], [-1], [0], ["3"], list(range(1, 20_002)), "1,2", {"1": 2}])
def test_a_malformed_lines_reply_is_refused(reply):
    with pytest.raises(TypeError):
        lines_run(reply)


def test_a_lines_reply_is_a_set_of_line_numbers():
    assert lines_run([3, 1, 3]) == {1, 3} and lines_run(None) == set()


def test_a_step_that_lost_count_makes_every_line_unknown():
    from grader.judge.unexercised import merge_lines

    known = merge_lines(set(), [1, 2])
    assert known == {1, 2} and merge_lines(known, None) == {1, 2}
    assert merge_lines(known, []) is None and merge_lines(None, [3]) is None
    assert notes(STEP, None, "cpu", "bfloat16") == []


def test_the_worker_stops_counting_once_the_learners_code_sets_its_own_trace_function(tmp_path):
    import runpy
    import sys

    from grader.worker.lines_run import LinesRun

    path = tmp_path / "submission.py"
    path.write_text("import sys\n\ndef f(x):\n    y = x + 1\n    return y\n\ndef g():\n    sys.settrace(None)\n")
    module = runpy.run_path(str(path))
    run = LinesRun(str(path))
    before = sys.gettrace()
    with run:
        module["f"](1)
    assert run.reply() == [3, 4, 5] and sys.gettrace() is before
    with run:
        module["g"]()
    assert run.reply() == []


def test_a_float16_branch_is_read_in_its_own_function_when_another_has_the_same_name():
    source = (
        "class A:\n"
        "    def step(self, loss):\n"
        "        loss.backward()\n"
        "\n"
        "\n"
        "class B:\n"
        "    def step(self, loss, dtype):\n"
        "        if dtype == torch.float16:\n"
        "            loss.backward()\n"
        "        return loss\n"
    )
    assert ("not_exercised.unscaled", 9) in _keys(notes(source, {3, 8, 10}, "cpu", "bfloat16"))
