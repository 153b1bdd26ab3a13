"""The English wording of the call-order findings of Hugging Face Accelerate (grader/checks/accelerate_calls.py),
kept apart from the other checks' (grader/wording/catalog_checks.py) so that each file reads on a few screens."""

ACCELERATE: dict[str, str | dict[str, str]] = {
    "accelerator_without_mixed_precision": "the Accelerator was created without mixed precision "
    "(mixed_precision='no'), so the prepared model runs in float32",
    "accelerator_without_mixed_precision.fix": "pass mixed_precision={expected!r} to Accelerator(...), chosen from "
    "amp_dtype: 'bf16' for torch.bfloat16, 'fp16' for torch.float16",
    "accelerator_wrong_precision": "the Accelerator was created with mixed_precision={got!r}, but this lesson runs "
    "{dtype} on {device}, which is {expected!r}",
    "accelerator_wrong_precision.fix": "choose mixed_precision from amp_dtype: 'bf16' if amp_dtype is torch.bfloat16, "
    "else 'fp16'",
    "accumulation_steps_mismatch": "the Accelerator accumulates over gradient_accumulation_steps={got}, but each "
    "step has {n} micro-batches: it divides the loss, syncs and steps at the wrong "
    "micro-batches",
    "accumulation_steps_mismatch.fix": "pass gradient_accumulation_steps=accumulation_steps (here {n}) to "
    "Accelerator(...)",
    "model_not_prepared": "the model was not passed to accelerator.prepare, so its forward does not run under "
    "Accelerate's autocast",
    "model_not_prepared.other_module": "accelerator.prepare got a module that is not the lesson's model, so the "
    "model you train does not run under Accelerate's autocast",
    "model_not_prepared.fix": "prepare both and use what prepare returns: `model, optimizer = "
    "accelerator.prepare(model, optimizer)`",
    "optimizer_not_prepared": "the optimizer was not passed to accelerator.prepare, so it steps and zeroes the "
    "gradients on every micro-batch instead of only when they are synced",
    "optimizer_not_prepared.fix": "prepare both and use what prepare returns: `model, optimizer = "
    "accelerator.prepare(model, optimizer)`",
    "backward_not_through_accelerator": "loss.backward() was called directly instead of accelerator.backward(loss): "
    "Accelerate neither divides the loss by the accumulation steps nor scales "
    "it for float16",
    "backward_not_through_accelerator.fix": "call accelerator.backward(loss) on the micro-batch's undivided loss",
    "loss_divided_by_hand": "the loss was divided by the accumulation steps before accelerator.backward(loss), which "
    "divides it by {n} again: the accumulated gradient is {n}x too small",
    "loss_divided_by_hand.fix": "pass the micro-batch's undivided loss: accelerator.backward(loss)",
    "clip_not_through_accelerator": "the gradients were clipped with torch.nn.utils directly: with float16 they are "
    "still multiplied by the loss scale at that point, so the threshold applies to "
    "the wrong values",
    "clip_not_through_accelerator.fix": "call accelerator.clip_grad_norm_(model.parameters(), max_norm), which "
    "unscales first",
    "clip_outside_sync_gradients": "accelerator.clip_grad_norm_ ran on a micro-batch whose gradients were not "
    "complete yet (accelerator.sync_gradients was False): it clipped a partial sum",
    "accelerator_unscale_twice": 'the gradients are clipped through Accelerate twice before one optimizer step (first at line {first}): each accelerator.clip_grad_norm_ unscales them first, and with float16 the second raises "unscale_() has already been called on this optimizer" (with bfloat16, as here, nothing raises)',
    "accelerator_unscale_twice.manual": 'accelerator.clip_grad_norm_ unscales the gradients itself, but scaler.unscale_ already did (line {first}): with float16 it raises "unscale_() has already been called on this optimizer"',
    "accelerator_unscale_twice.fix": "clip once per optimizer step, with accelerator.clip_grad_norm_ only, inside `if accelerator.sync_gradients:`; do not call scaler.unscale_ yourself",
    "clip_outside_sync_gradients.fix": "clip only under `if accelerator.sync_gradients:`, right before "
    "optimizer.step()",
    "accumulate_missing": "no micro-batch ran inside `with accelerator.accumulate(model):`, so sync_gradients "
    "stayed True and the prepared optimizer stepped on every micro-batch instead of once every "
    "{n}",
    "accumulate_missing.stepped_once": "no micro-batch ran inside `with accelerator.accumulate(model):`: the optimizer stepped once, as it should, but Accelerate never learnt which micro-batch ends each group of {n} (sync_gradients stayed True), so with several processes every micro-batch's backward all-reduces the gradients",
    "accumulate_missing.fix": "run each micro-batch's forward, backward and optimizer step inside "
    "`with accelerator.accumulate(model):`",
}
