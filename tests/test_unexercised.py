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


def test_a_float16_branch_that_divides_its_scaled_loss_is_not_called_unscaled():
    source = FP16.replace("        loss.backward()\n", "        scaler.scale(loss).div(4).backward()\n")
    found = _keys(notes(source, {2, 7, 8, 9, 10, 11}, "cpu", "bfloat16"))
    assert ("not_exercised.if", 3) in found
    assert not any(k == "not_exercised.unscaled" for k, _ in found)


def test_one_line_that_did_not_run_is_said_as_one_line():
    source = "def f(x, flag):\n    if flag:\n        x = x + 1\n    return x\n"
    (found,) = notes(source, {2, 4}, "cpu", "bfloat16")
    assert found.message.startswith("line 3 of f never ran") and "it is under `if flag:`" in found.message


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


def _ran_but(source: str, *skipped: int) -> set[int]:
    return set(range(1, source.count("\n") + 2)) - set(skipped)


TIMED = """def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    timed = inputs.is_cuda and LOG
    loss = model(inputs)
    if timed:
        end.synchronize()
        print(float(loss))
    if device_type == "cuda":
        torch.cuda.synchronize()
    if LOG:
        print(loss.item())
    return loss


def report(loss, device_type):
    if device_type == "cuda":
        return loss.item()
"""


def test_a_host_sync_on_a_cuda_only_branch_that_did_not_run_is_said_at_its_line():
    # the test is a name assigned once in the step (an `and` with is_cuda): the branch runs on CUDA only
    found = _keys(notes(TIMED, _ran_but(TIMED, 5, 6, 8, 10, 16), "cpu", "bfloat16", "train_step"))
    assert ("not_exercised.cuda_sync", 5) in found and ("not_exercised.cuda_value", 6) in found


def test_a_sync_the_steps_own_rule_names_or_that_is_not_on_a_cuda_branch_of_the_step_is_not_said():
    found = _keys(notes(TIMED, _ran_but(TIMED, 5, 6, 8, 10, 16), "cpu", "bfloat16", "train_step"))
    # line 8: static.cuda_only_host_syncs names it already; line 10: `if LOG:` may run on a CPU; line 16: not the step
    assert not any(k.startswith("not_exercised.cuda_") and line in (8, 10, 16) for k, line in found)


PREPARE = """def prepare(model, device):
    if device.type == "cuda":
        ddp = DDP(model, device_ids=[device.index])
        ddp = ddp.cuda()
    else:
        ddp = DDP(model.to(device))
    return ddp
"""


def test_ddp_wrapping_before_the_move_on_cuda_only_is_said_on_cuda():
    found = notes(PREPARE, _ran_but(PREPARE, 3, 4), "cpu", "bfloat16", "train_step", given_on_cpu="prepare")
    said = {(f.text["message"]["key"], f.line): f.message for f in found}
    assert "parameters were on cpu" in said[("not_exercised.would_cuda", 3)]
    assert "moved with .cuda() after it was wrapped" in said[("not_exercised.would_cuda", 4)]


def test_a_model_given_on_its_device_or_moved_first_is_not_said_to_be_wrapped_before_moving():
    assert ("not_exercised.would_cuda", 3) not in _keys(notes(PREPARE, _ran_but(PREPARE, 3, 4), "cpu", "bf16"))
    moved_first = PREPARE.replace(
        "        ddp = DDP(model, device_ids", "        model.cuda()\n        ddp = DDP(model, device_ids"
    )
    moved_first = moved_first.replace("        ddp = ddp.cuda()\n", "")
    found = _keys(notes(moved_first, _ran_but(moved_first, 3, 4), "cpu", "bfloat16", given_on_cpu="prepare"))
    assert not any(k == "not_exercised.would_cuda" for k, _ in found)


def test_a_move_on_the_other_side_of_the_if_is_not_after_the_wrap():
    # CUDA grading: the else branch did not run, and its move follows the wrap only in the source's order
    found = _keys(notes(PREPARE, _ran_but(PREPARE, 6), "cuda:0", "float16", given_on_cpu="prepare"))
    assert ("not_exercised.else", 6) in found
    assert not any(k.startswith("not_exercised.would") for k, _ in found)


def test_a_model_handed_to_a_helper_before_the_wrap_may_have_moved():
    source = PREPARE.replace(
        "        ddp = DDP(model, device_ids", "        place(model, device)\n        ddp = DDP(model, device_ids"
    )
    found = _keys(notes(source, _ran_but(source, 3, 4, 5), "cpu", "bfloat16", given_on_cpu="prepare"))
    assert ("not_exercised.would_cuda", 4) not in found and ("not_exercised.would_cuda", 5) in found


def test_a_name_bound_more_than_once_is_not_read_as_a_cuda_test():
    source = TIMED.replace("    loss = model(inputs)\n", "    for timed in (timed,):\n        loss = model(inputs)\n")
    found = _keys(notes(source, _ran_but(source, 6, 7, 9, 11, 17), "cpu", "bfloat16", "train_step"))
    assert ("not_exercised.if", 6) in found and not any(k.startswith("not_exercised.cuda_") for k, _ in found)
