"""Call-order rules over hand-written traces, for the patterns golden submissions cannot all spell out."""

from grader.checks import call_order

CTX = {"autocast": False, "scaler": False, "micro_batches": 1, "device_type": "cpu", "amp_dtype": "bfloat16"}


def ids(events, **ctx):
    return {f.id for f in call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, **ctx})}


def ev(kind, line, **fields):
    return {"ev": kind, "line": line, **fields}


def test_zeroing_between_backward_and_step_is_diagnosed_at_the_zero_grad():
    found = call_order.diagnose(
        [
            {
                "events": [
                    ev("backward", 3),
                    ev("zero_grad", 4, owner="Optimizer"),
                    ev("optimizer_step", 5, via_scaler=False, optimizer=0),
                ],
                "param_dtypes": [],
            }
        ],
        CTX,
    )
    assert [(f.id, f.line) for f in found] == [("zero_grad_before_step", 4)]


def test_zeroing_through_a_scaler_step_is_diagnosed_too():
    assert "zero_grad_before_step" in ids(
        [ev("backward", 3, scaled=True), ev("zero_grad", 4, owner="Module"), ev("scaler_step", 5, optimizer=0)]
    )


def test_two_models_each_zeroed_after_its_own_step_are_not_this_mistake():
    events = [
        ev("zero_grad", 1, owner="Optimizer"),
        ev("backward", 2),
        ev("backward", 3),
        ev("optimizer_step", 4, via_scaler=False, optimizer=0),
        ev("zero_grad", 5, owner="Optimizer"),
        ev("optimizer_step", 6, via_scaler=False, optimizer=1),
        ev("zero_grad", 7, owner="Optimizer"),
    ]
    assert "zero_grad_before_step" not in ids(events)


def test_zeroing_before_a_later_backward_is_the_usual_order():
    events = [
        ev("backward", 2),
        ev("optimizer_step", 3, via_scaler=False, optimizer=0),
        ev("zero_grad", 4, owner="Optimizer"),
        ev("backward", 5),
        ev("optimizer_step", 6, via_scaler=False, optimizer=0),
    ]
    assert "zero_grad_before_step" not in ids(events)


def test_a_direct_step_after_unscale_does_not_say_the_gradients_are_still_scaled():
    events = [
        ev("backward", 3, scaled=True),
        ev("unscale_", 4, optimizer=0),
        ev("optimizer_step", 5, via_scaler=False, optimizer=0),
        ev("update", 6),
    ]
    found = call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, "scaler": True})
    direct = next(f for f in found if f.id == "optimizer_step_direct")
    assert "still multiplied" not in direct.message and "unscale_ did unscale" in direct.message


def test_a_direct_step_without_unscale_says_the_gradients_are_still_scaled():
    events = [ev("backward", 3, scaled=True), ev("optimizer_step", 5, via_scaler=False, optimizer=0), ev("update", 6)]
    found = call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, "scaler": True})
    assert "still multiplied" in next(f for f in found if f.id == "optimizer_step_direct").message


def test_a_skipped_micro_batch_is_not_also_an_update_after_too_few_micro_batches():
    events = [
        ev("loss_op", 2, value=1.0, autocast=False),
        ev("backward", 3, scaled=True, value=1.0),
        ev("loss_op", 2, value=1.0, autocast=False),
        ev("backward", 3, scaled=True, value=1.0),
        ev("scaler_step", 5, optimizer=0),
        ev("update", 6),
    ]
    assert "update_every_micro_batch" not in ids(events, scaler=True, micro_batches=3)
    assert "micro_batch_skipped" in ids(events, scaler=True, micro_batches=3)


def test_a_skipped_micro_batch_points_at_the_slice_that_drops_it_and_a_slice_alone_is_no_finding():
    from grader.results import finding

    static = [finding("micro_batch_skipped", 9, key="micro_batch_skipped.static")]
    traced = [finding("micro_batch_skipped", 12, backwards=3, n=4)]
    assert [(f.id, f.line) for f in call_order.merge(traced, static, traced=True)] == [("micro_batch_skipped", 9)]
    assert call_order.merge([], static, traced=False) == []


def test_a_cast_submodule_is_not_called_the_model_itself():
    found = call_order.diagnose(
        [
            {
                "events": [ev("cast_model", 4, to="half"), ev("optimizer_step", 6, via_scaler=False, optimizer=0)],
                "param_dtypes": ["float16", "float32"],
            }
        ],
        CTX,
    )
    cast = next(f for f in found if f.id == "master_weights_16bit")
    assert "submodule" in cast.message and "model itself" not in cast.message


SCALER = {"autocast": False, "scaler": True}


def test_an_update_between_two_optimizers_steps_is_before_the_second_step():
    events = [
        ev("backward", 3, scaled=True, autocast=False),
        ev("scaler_step", 4, optimizer=0, scaler=0),
        ev("update", 5, scaler=0),
        ev("scaler_step", 6, optimizer=1, scaler=0),
    ]
    found = call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, **SCALER})
    assert [(f.id, f.line) for f in found] == [("update_before_step", 5)]
    assert "line 6" in found[0].message


def test_one_update_after_every_step_is_the_right_order():
    events = [
        ev("backward", 3, scaled=True, autocast=False),
        ev("scaler_step", 4, optimizer=1, scaler=0),
        ev("scaler_step", 5, optimizer=0, scaler=0),
        ev("update", 6, scaler=0),
    ]
    assert ids(events, **SCALER) == set()


def test_a_second_scaler_is_one_finding_and_each_scaler_is_judged_alone():
    events = [
        ev("scale", 2, value=1.0, enabled=True, scaler=0),
        ev("backward", 2, scaled=True, autocast=False),
        ev("scale", 3, value=1.0, enabled=True, scaler=1),
        ev("backward", 3, scaled=True, autocast=False),
        ev("scaler_step", 4, optimizer=0, scaler=0),
        ev("update", 5, scaler=0),
        ev("scaler_step", 6, optimizer=1, scaler=1),
        ev("update", 7, scaler=1),
    ]
    found = call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, **SCALER})
    assert [(f.id, f.line) for f in found] == [("second_scaler", 3)]


def accumulated(losses, used, reached):
    """Micro-batches with these loss values and backward values, then a step whose gradients reached the
    optimizer `reached` times their norm after the last backward."""
    events = []
    for i, (loss, value) in enumerate(zip(losses, used)):
        events += [ev("loss_op", 10 + i, value=loss, autocast=False), ev("backward", 20 + i, value=value)]
    return events + [ev("optimizer_step", 30, via_scaler=False, optimizer=0, reached=reached)]


def test_losses_undivided_but_gradients_divided_before_the_step_are_divided():
    events = accumulated([2.0] * 4, [2.0 * 1024] * 4, reached=1 / 1024 / 4)
    assert "loss_not_divided" not in ids(events, micro_batches=4)


def test_the_gradient_that_reached_the_optimizer_at_full_size_is_not_divided():
    events = accumulated([2.0] * 4, [2.0 / 4 * 1024] * 4, reached=4 / 1024)
    assert "loss_not_divided" in ids(events, micro_batches=4)


def test_one_undivided_loss_of_four_is_named_at_its_loss():
    events = accumulated([2.0] * 4, [2.0 / 4, 2.0, 2.0 / 4, 2.0 / 4], reached=1.0)
    found = {
        f.id: f for f in call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, "micro_batches": 4})
    }
    assert found["loss_not_divided"].line == 11
    assert "1 of the 4" in found["loss_not_divided"].message


def test_a_step_whose_gradients_were_not_measured_is_not_judged():
    events = accumulated([2.0] * 4, [2.0] * 4, reached=None)
    assert "loss_not_divided" not in ids(events, micro_batches=4)


def test_a_backward_into_unscaled_gradients_is_named_at_the_unscale():
    events = [
        ev("backward", 3, scaled=True, autocast=False),
        ev("unscale_", 4, optimizer=0, enabled=True, scaler=0),
        ev("backward", 3, scaled=True, autocast=False),
        ev("backward_after_unscale", 3, optimizers=[0]),
        ev("scaler_step", 6, optimizer=0, scaler=0),
        ev("update", 7, scaler=0),
    ]
    found = call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, **SCALER})
    assert [(f.id, f.line) for f in found] == [("unscale_before_backward", 4)]
    assert "line 3" in found[0].message


def test_a_weight_far_from_both_1_and_1_over_n_is_not_an_undivided_loss():
    events = accumulated([2.0] * 4, [2.0 / 4 * 1024] * 4, reached=1.0)  # never unscaled: another mistake's
    assert "loss_not_divided" not in ids(events, micro_batches=4)


def test_a_deprecated_autocast_is_named_by_the_spelling_its_device_has():
    def said(device_type):
        found = call_order.diagnose(
            [{"events": [ev("autocast_enter", 7, device_type=device_type, deprecated=True)], "param_dtypes": []}],
            {**CTX, "device_type": device_type},
        )
        return next(f.message for f in found if f.id == "deprecated_api")

    assert said("cpu").startswith("torch.cpu.amp.autocast is") and said("cuda").startswith("torch.cuda.amp.autocast is")


def test_stepping_before_the_backward_and_zeroing_after_it_is_diagnosed_at_the_zero_grad():
    events = [
        ev("optimizer_step", 9, via_scaler=False, optimizer=0),
        ev("backward", 10),
        ev("zero_grad", 11, owner="Optimizer"),
    ]
    found = call_order.diagnose([{"events": events, "param_dtypes": []}], CTX)
    assert [(f.id, f.line) for f in found] == [("zero_grad_before_step", 11)]
    assert "line 9" in found[0].message


def test_a_step_deferred_to_the_next_call_after_zeroing_is_not_this_mistake():
    events = [
        ev("optimizer_step", 9, via_scaler=False, optimizer=0),
        ev("zero_grad", 10, owner="Optimizer"),
        ev("backward", 11),
    ]
    assert "zero_grad_before_step" not in ids(events)


def test_a_forward_that_bypasses_the_ddp_wrapper_is_not_said_to_run_in_no_sync():
    prepare = {"phase": "prepare", "events": [ev("ddp_wrap", 8, param_device="cpu", lesson=True)]}
    step = [
        ev("no_sync", 18),
        ev("forward", 20, copy=False),
        ev("backward", 21),
        ev("forward", 20, copy=False),
        ev("backward", 21),
        ev("scaler_step", 23, optimizer=0),
    ]
    ctx = {**CTX, "ranks": 2, "micro_batches": 2}
    found = call_order.diagnose([prepare, {"events": step, "param_dtypes": []}], ctx)
    (unsynced,) = [f for f in found if f.id == "gradients_not_synchronised"]
    assert unsynced.line == 20 and "no_sync" not in unsynced.message


def test_an_autocast_entered_but_turned_off_is_named_at_its_line_not_said_to_be_missing():
    events = [
        ev("autocast_enter", 7, device_type="cpu", dtype="bfloat16", enabled=False, deprecated=False),
        ev("forward", 8, autocast=False),
        ev("autocast_exit", 9, device_type="cpu"),
        ev("backward", 10),
        ev("optimizer_step", 11, via_scaler=False, optimizer=0),
    ]
    found = call_order.diagnose([{"events": events, "param_dtypes": []}], {**CTX, "autocast": True})
    (off,) = [f for f in found if f.id == "no_autocast"]
    assert off.line == 7 and "was entered, but with enabled=False" in off.message
