"""The English wording of every check's message and of every finding with its
fix: the largest part of the catalog (grader/wording/catalog.py), kept apart so
that each file reads on a few screens. Keys are finding ids (`<id>` and
`<id>.fix`, variants as `<id>.<variant>`) and check messages (`<check>.<case>`)."""

CHECKS: dict[str, str | dict[str, str]] = {
    # -- call order: findings and their fixes -------------------------------------------------------------
    "master_weights_16bit": "the model's parameters are {dtypes}: the model itself was cast to 16-bit (.half(), "
    ".bfloat16() or .to(float16)), so the optimizer updates 16-bit weights and small updates "
    "are lost",
    "master_weights_16bit.static": "the model is cast to 16-bit, so the optimizer would update 16-bit weights",
    "master_weights_16bit.submodule": "some of the model's parameters are {dtypes}, the others float32: a submodule was cast to 16-bit (.half(), .bfloat16() or .to(float16)), so the optimizer updates its weights in 16-bit and their small updates are lost",
    "master_weights_16bit.fix": "keep the model in float32 and let torch.autocast cast each op on the fly",
    "no_autocast": "no torch.autocast region was entered during the step, so everything ran in float32",
    "no_autocast.fix": "wrap the forward pass and the loss in `with torch.autocast(device_type=device_type, "
    "dtype=amp_dtype):`",
    "no_autocast.disabled": "torch.autocast was entered, but with enabled=False (its enabled argument was false in "
    "this run), so it cast nothing and everything ran in float32",
    "no_autocast.fix_disabled": "leave enabled out (it defaults to True), or make it true whenever this step should "
    "run in mixed precision",
    "autocast_wrong_device": "autocast was entered for device_type={device!r}, but the model runs on {expected!r}, "
    "so it had no effect",
    "autocast_wrong_device.fix": "pass the device_type argument: torch.autocast(device_type=device_type, "
    "dtype=amp_dtype)",
    "autocast_wrong_dtype": "autocast used dtype={dtype} but this exercise on {device} expects {expected}",
    "autocast_wrong_dtype.fix": "use the amp_dtype argument instead of a hard-coded dtype",
    "backward_inside_autocast": "backward() was called inside the autocast block; the backward pass should not run "
    "under autocast (its ops already use the dtypes chosen in the forward pass)",
    "backward_inside_autocast.static": "backward() is called inside the autocast block",
    "backward_inside_autocast.autograd_grad": "torch.autograd.grad was called inside the autocast block; like "
    "backward(), this backward pass should not run under autocast (its "
    "ops already use the dtypes chosen in the forward pass)",
    "backward_inside_autocast.fix": "dedent the backward call so it comes after the `with torch.autocast(...)` block",
    "forward_outside_autocast": "the model's forward pass ran outside autocast, so its matmuls ran in float32",
    "forward_outside_autocast.fix": "call the model inside the `with torch.autocast(...)` block",
    "loss_outside_autocast": "the loss was computed after leaving the autocast block",
    "loss_outside_autocast.fix": "compute the loss inside the `with torch.autocast(...)` block too: autocast keeps "
    "loss ops in float32 by itself, and the recipe is forward + loss under autocast, "
    "backward outside",
    "backward_unscaled": "backward() was called on the unscaled loss, so small float16 gradients can underflow to zero",
    "backward_unscaled.autograd_grad": "torch.autograd.grad ran on the unscaled loss, so small float16 gradients "
    "can underflow to zero: differentiate scaler.scale(loss) and multiply the "
    "gradients it returns by 1.0 / scaler.get_scale()",
    "backward_unscaled.fix": "call scaler.scale(loss).backward()",
    "optimizer_step_direct": "optimizer.step() was called directly, bypassing the scaler: gradients are still "
    "multiplied by the scale, and steps with inf/NaN gradients are not skipped",
    "optimizer_step_direct.unscaled": "optimizer.step() was called directly, bypassing the scaler: scaler.unscale_ did unscale the gradients, but a step with inf/NaN gradients is applied instead of skipped",
    "optimizer_step_direct.fix": "call scaler.step(optimizer) instead of optimizer.step()",
    "update_missing": "scaler.update() was never called, so the scale never adapts (and unscale_ bookkeeping is "
    "never reset)",
    "update_missing.fix": "call scaler.update() once after scaler.step(optimizer)",
    "update_before_step": "scaler.update() was called before scaler.step(optimizer)",
    "update_before_step.later": "scaler.update() ran before the scaler.step(optimizer) at line {step}: update() "
    "closes the iteration, so that step's inf/NaN check comes too late to change the scale, and the step unscales its "
    "gradients anew (a second time, where unscale_ already ran)",
    "update_before_step.fix": "call scaler.step(optimizer) first, then scaler.update()",
    "second_scaler": "{n} GradScalers scaled or stepped in one iteration (the second one from here): each keeps a "
    "scale and skipped steps of its own, while one scaler serves every loss and optimizer of the iteration",
    "second_scaler.fix": "use one GradScaler for every loss (scaler.scale) and every optimizer (scaler.step), and call "
    "its update() once, after the last step",
    "update_more_than_once": "scaler.update() ran {n} times in one iteration: the scale changes between the "
    "optimizers' steps, so their inf/NaN checks and unscaling disagree",
    "update_more_than_once.fix": "step every optimizer through the scaler first, then call scaler.update() once, at "
    "the end of the iteration",
    "unscale_twice": "scaler.unscale_(optimizer) was called twice in one step",
    "unscale_before_backward": "scaler.unscale_(optimizer) ran before the backward at line {backward}, which then "
    "added gradients multiplied by the scale to that optimizer's gradients already divided by it: the step gets "
    "a mix, far too large",
    "unscale_before_backward.fix": "call unscale_ after the last backward of the iteration (after every micro-batch), "
    "right before clipping and scaler.step",
    "unscale_twice.fix": "call unscale_ once per optimizer per step, right before clipping",
    "clip_without_unscale": "gradients were clipped while still multiplied by the loss scale, so the clipping "
    "threshold is applied to the wrong values",
    "clip_without_unscale.fix": "call scaler.unscale_(optimizer) right before clipping",
    "clip_of_other_optimizer": "the gradients of {optimizers} were clipped while still multiplied by the loss "
    "scale: scaler.unscale_ ran only for another optimizer, and it unscales that "
    "optimizer's parameters only, so this clip compared a scaled norm with its threshold",
    "clip_of_other_optimizer.fix": "before clipping a model's parameters, call scaler.unscale_ with the optimizer "
    "that owns them: scaler.unscale_(optimizer_a) before clipping model_a, "
    "scaler.unscale_(optimizer_b) before clipping model_b",
    "step_every_micro_batch": "the optimizer stepped {steps} times for one effective batch of {n} micro-batches",
    "step_every_micro_batch.fix": "accumulate: call backward for every micro-batch, but step (and update) only once, "
    "after the last one",
    "update_every_micro_batch": "scaler.update() ran after {forwards} of the {n} micro-batches' losses were "
    "computed: the scale must stay the same for all micro-batches of one effective batch",
    "update_every_micro_batch.repeated": "scaler.update() ran after {forwards} of the {n} micro-batches' losses were "
    "computed, and {updates} times in one step: the scale must stay the same "
    "for all micro-batches of one effective batch",
    "update_every_micro_batch.fix": "call scaler.update() once per effective batch, after scaler.step(optimizer)",
    "one_backward_for_all_micro_batches": "the losses of {losses} micro-batches were added up and back-propagated in "
    "{backwards} backward() call(s), so every micro-batch's graph and "
    "activations stayed in memory until then: that is the memory gradient "
    "accumulation exists to save",
    "one_backward_for_all_micro_batches.fix": "call scaler.scale(loss / n).backward() inside the loop, once per "
    "micro-batch",
    "micro_batch_skipped": "backward() ran {backwards} time(s) for {n} micro-batches, so some micro-batches never "
    "reached the gradient",
    "micro_batch_skipped.static": "this line leaves micro-batches out of the step, so their data never reach the gradient",
    "micro_batch_skipped.fix": "loop over every micro-batch and call backward once for each",
    "model_copy_trained": "the forward here ran a copy of the model, not the model the optimizer's parameters "
    "belong to: the backward gave none of those parameters a gradient, so the optimizer has nothing to apply (a "
    'GradScaler\'s step stops with "No inf checks were recorded for this optimizer")',
    "model_copy_trained.fix": "train the model you were given: move and wrap it itself (DDP(model.to(device))), "
    "without copy.deepcopy, so that the optimizer's parameters are the ones the forward uses",
    "zero_grad_before_step": "gradients were zeroed after the backward pass and before the optimizer step, so the "
    "step had no gradients to apply and the model did not train",
    "zero_grad_before_step.next_call": "the optimizer step (line {step}) runs before the backward pass, and the "
    "gradients the backward makes are zeroed here, before the next call's step: every step finds no gradients to "
    "apply and the model does not train",
    "zero_grad_before_step.next_call_fix": "step after the backward pass, in this order: loss.backward(), "
    "optimizer.step(), then optimizer.zero_grad() (or zero_grad() first, at the start of the step)",
    "zero_grad_before_step.fix": "call optimizer.zero_grad() at the start of the step (or right after "
    "optimizer.step()), never between backward() and step()",
    "zero_grad_every_micro_batch": "gradients were zeroed between micro-batches, so only the last one counts",
    "zero_grad_every_micro_batch.fix": "call optimizer.zero_grad() once per effective batch (before the first "
    "micro-batch or after the step)",
    "loss_not_divided": "each micro-batch's loss reached the gradient at full size, so the accumulated gradient, as "
    "clipping or the optimizer step gets it, is {n}x the gradient of the effective batch",
    "loss_not_divided.some": "{k} of the {n} micro-batch losses (number {which}) reached the gradient at full size "
    "while the others were divided by {n}, so in the accumulated gradient each of them weighs {n}x a divided one",
    "loss_not_divided.fix": "divide each micro-batch loss by the number of micro-batches (loss / {n}) before "
    "scaling it",
    "deprecated_api": "{name} is a deprecated spelling",
    "deprecated_api.fix": "write torch.autocast(device_type=..., dtype=...), torch.amp.GradScaler(device_type) and "
    "torch.amp.custom_fwd / custom_bwd(device_type=...) instead",
    "scaler_step_missing": "the optimizer never stepped during the training step",
    "scaler_step_missing.fix": "call scaler.step(optimizer) after the backward pass",
    "step_missing": "the optimizer never stepped during the training step",
    "step_missing.fix": "call optimizer.step() after the backward pass",
    # -- call order: distributed data parallel (grader/checks/ddp_calls.py) --------------------------------
    "wrapped_before_moved": "the model was moved with {call} after it was wrapped in DistributedDataParallel: DDP "
    "sets up its gradient buckets and hooks on the parameters as they are when it wraps them "
    "(on CPU the move changes nothing and training is not affected; on CUDA, DDP refuses a "
    "module that is not on the rank's device, or reduces the wrong tensors)",
    "wrapped_before_moved.device": "the model was wrapped in DistributedDataParallel while its parameters were on "
    "{device}, but this rank's device is {expected}: DDP sets up its gradient "
    "buckets on the parameters as they are when it wraps them",
    "wrapped_before_moved.fix": "move first, then wrap: `model = model.to(device)`, then `DDP(model, "
    "device_ids=[device.index] if device.type == 'cuda' else None)`",
    "gradients_not_synchronised": "the gradients were never averaged across the {ranks} ranks during the step (no "
    "backward after a forward of the DDP model outside no_sync(), no all_reduce of a "
    "gradient): each rank trained on its own share of the batch, and the ranks drift "
    "apart",
    "gradients_not_synchronised.no_sync": "every micro-batch ran inside model.no_sync(), so the gradients were never "
    "all-reduced across the {ranks} ranks: each rank trained on its own share "
    "of the batch, and the ranks drift apart",
    "gradients_not_synchronised.unwrapped": "the model was called here without its DistributedDataParallel wrapper "
    "(model.module, or the model as it was before wrapping): only a forward of the wrapper makes its backward "
    "all-reduce, so the gradients were never averaged across the {ranks} ranks: each rank trained on its own share "
    "of the batch, and the ranks drift apart",
    "gradients_not_synchronised.fix": "call the DDP-wrapped model (not model.module) and leave the last micro-batch "
    "outside `model.no_sync()`, so that its backward averages the accumulated "
    "gradients across the ranks",
    "ddp_wraps_other_module": "the DistributedDataParallel module whose forward ran wraps another module, not the "
    "lesson's model: its backward averaged that module's gradients across the {ranks} "
    "ranks, while the lesson's model trained unwrapped and each rank kept its own "
    "gradients",
    "ddp_wraps_other_module.fix": "wrap the model you were given: `return DDP(model, ...)` in prepare, and call "
    "that wrapped model (not model.module, not another module) for every micro-batch",
    "allreduce_every_micro_batch": "the gradients were all-reduced {syncs} times for {n} micro-batches: every "
    "backward after a forward of the DDP model outside model.no_sync() averages them "
    "across the ranks, so {wasted} of those all-reduces only cost communication (one "
    "after the last micro-batch gives the same gradients)",
    "allreduce_every_micro_batch.fix": "run the forward and backward of every micro-batch but the last inside "
    "`with model.no_sync():`",
    "sync_not_last": "the gradients were all-reduced in the backward of an earlier micro-batch, and {later} more "
    "micro-batch(es) ran after it inside model.no_sync(): their gradients stayed on each rank, so "
    "the ranks' gradients differ when the optimizer steps",
    "sync_not_last.fix": "leave only the last micro-batch outside `model.no_sync()`: its backward all-reduces "
    "everything accumulated so far",
    "call_on_some_ranks": "{call} ran {n} time(s) on rank {rank} but {m} time(s) on rank {other} in the same step: "
    "every rank must make the same calls, or their weights and loss scales drift apart",
    "call_on_some_ranks.fix": "make the call on every rank; only printing, logging and saving belong under "
    "`if rank == 0:`",
    # -- call order: the check's message ------------------------------------------------------------------
    "call_order.pass": "the AMP calls happen in the right order",
    "call_order.untraced": "no step could be traced",
    "call_order.mistakes": {
        "one": "{n} mistake in the order of AMP calls: {first}",
        "other": "{n} mistakes in the order of AMP calls; the first: {first}",
    },
    # -- parity -------------------------------------------------------------------------------------------
    "parity.no_tolerance": "the exercise sets no parity tolerance for {dtype}",
    "parity.loss": "the loss differs from the FP32 run by {dev:.1%} at step {step} (allowed {tol:.1%}): {mine:.4f} "
    "vs {base:.4f}",
    "parity.frozen": "parameter {name!r}, in {layer}, did not change at all in {steps} steps, while FP32 training "
    "moved it: no gradient reached it, or the optimizer never updated it",
    "parity.update": "after {steps} steps, the update of parameter {name!r}, in {layer}, is {dev:.1%} away from the "
    "FP32 run's update (allowed {tol:.1%}; {off} of {total} tensors are off)",
    "parity.fail": "{problems}. {advice}",
    "parity.advice": "The training step itself differs: check the learning rate and what scales the gradients "
    "(clipping, loss division for accumulation, the loss scale), a missing or doubled step or "
    "zero_grad, and 16-bit weights.",
    "parity.advice.loss_only": "Every update is within tolerance of the FP32 run's, so look first at the loss the "
    "step returns: it should be the loss of the whole batch the task names (the mean over the micro-batches, not "
    "the last one's; not divided, scaled or detached into another value).",
    "parity.pass": "matches the FP32 run within tolerance over {steps} steps (loss {loss:.2%}, update {update:.2%})",
    "parity.pass.skipped": "matches the FP32 run within tolerance over {steps} steps (loss {loss:.2%}, over the "
    "{compared} steps that did not overflow; update {update:.2%})",
    "block_not_trained": "{layer} never trained",
    "block_not_trained.fix": "make sure every block gets a gradient (e.g. use_reentrant=False with checkpointing, no "
    "requires_grad_(False), no torch.no_grad() around the forward) and that the optimizer "
    "steps every effective batch",
    "block_not_trained.fix_optimizer": "build the optimizer from `model.parameters()` after the last call that "
    "replaces them (fully_shard): it holds other tensors, so its step never reaches this layer",
    # -- coverage -----------------------------------------------------------------------------------------
    "coverage.none": "no matmul or convolution ran during the traced step",
    "coverage.fp32_numbers": "the trained weights did not move the way 16-bit arithmetic moves them: measured from "
    "the FP32 run, they went {toward:.0%} of the way toward a real mixed-precision run (a "
    "real one goes about 100%). The 16-bit work that was reported did not happen",
    "numbers_fp32": "the numbers show float32 arithmetic",
    "numbers_fp32.fix": "run the forward pass under torch.autocast with amp_dtype, and do not patch the grader",
    "coverage.pass": "{fraction:.0%} of the matmul FLOPs ran in 16-bit",
    "coverage.all_fp32": "every matmul and convolution ran in float32: none ran with torch.autocast on in a 16-bit "
    "dtype",
    "coverage.all_fp32.policy": "every matmul and convolution ran in float32: no MixedPrecisionPolicy with a 16-bit "
    "param_dtype cast the weights they ran with",
    "no_16bit_matmul": "no matmul or convolution ran in 16-bit",
    "no_16bit_matmul.fix": "run the model's forward pass itself (not only the loss) inside "
    "torch.autocast(device_type=..., dtype=amp_dtype)",
    "no_16bit_matmul.fix_policy": "pass `mp_policy=MixedPrecisionPolicy(param_dtype=torch.{dtype}, "
    "reduce_dtype=torch.float32)` to every fully_shard call: in this lesson the policy, not autocast, is the mixed "
    "precision",
    "fp32_layer": "{layer} ran in float32 ({share:.0%} of the matmul FLOPs)",
    "fp32_layer.fix": "run it inside the autocast block (and do not cast its input back to float32)",
    "fp32_layer.fix_policy": "shard it (or the block that holds it) with the 16-bit MixedPrecisionPolicy, and do not "
    "cast its input back to float32",
    "coverage.partial": "only {fraction:.0%} of the matmul FLOPs ran in 16-bit (at least {min:.0%} expected): {where}",
    "coverage.backward_fp32": "the float32 matmuls ran outside every layer of the model (called from the step "
    "itself, or in a backward that no one layer's weights account for)",
    "coverage.fp8_compiled_cpu": "not applicable here: FP8 is emulated on a CPU, and in compiled code the rounding "
    "to FP8 is fused into other kernels, so the matmuls the grader sees are float32 ones on FP8-rounded values; "
    "on a GPU they are FP8 kernels and are counted",
    # -- memory -------------------------------------------------------------------------------------------
    "memory.not_applicable": "this exercise sets no memory threshold for {device}: not applicable here",
    "memory.unmeasured": "peak memory could not be measured",
    "memory.leak": "live memory grew by about {grow} at every step ({steps} steps measured): the code keeps tensors "
    "from one step to the next, so a long training run runs out of memory",
    "memory_leak": "each step left {grow} allocated after it returned: tensors (an output, a loss with its graph, "
    "activations) are kept across steps",
    "memory_leak.fix": "keep plain numbers across steps (loss.item()), not tensors; do not append outputs or losses "
    "to a list that outlives the step",
    "memory.pass": "peak memory {peak} is {ratio:.0%} of the FP32 baseline's {base} (at most {limit:.0%} allowed)",
    "memory.fail": "peak memory {peak} is {ratio:.0%} of the FP32 baseline's {base}; at most {limit:.0%} is "
    "allowed. Activations dominate: run the forward under autocast, recompute activations with "
    "torch.utils.checkpoint, free gradients with zero_grad(set_to_none=True), and do not keep "
    "tensors that hold the graph",
    # -- overflow -----------------------------------------------------------------------------------------
    "overflow_step_applied": "the grader made step {step}'s gradients overflow (inf), and {n} parameter tensors "
    "changed: the optimizer stepped with non-finite gradients",
    "overflow_step_applied.nonfinite": "the grader made step {step}'s gradients overflow (inf), and {n} parameter "
    "tensors became inf/NaN: the optimizer stepped with non-finite gradients",
    "overflow_step_applied.fix": "step through the scaler, scaler.step(optimizer), which skips a step whose "
    "gradients are inf or NaN",
    "scale_unknown": "the GradScaler passed to the function reported no usable scale",
    "scale_unknown.fix": "use the scaler argument: scaler.scale(loss).backward(), scaler.step(optimizer), "
    "scaler.update()",
    "scale_not_backed_off": "after the overflowed step the loss scale stayed at {scale:g} instead of backing off",
    "scale_not_backed_off.fix": "call scaler.update() once per step, after scaler.step(optimizer): it lowers the "
    "scale after an overflow",
    "overflow_step_raised": "on step {step} the grader made every gradient overflow (inf), as a float16 backward "
    "can, and the step raised: {detail}. With a GradScaler an overflow is normal: "
    "scaler.step(optimizer) skips that step and scaler.update() lowers the scale",
    "overflow_step_raised.rank": "on step {step} the grader made every gradient overflow (inf), as a float16 "
    "backward can, and rank {rank}'s step raised: {detail}. With a GradScaler an "
    "overflow is normal: scaler.step(optimizer) skips that step and scaler.update() "
    "lowers the scale",
    "overflow_step_raised.fix": "let the scaler deal with non-finite gradients: do not raise or assert on them "
    "(clip_grad_norm_'s error_if_nonfinite=True, a check of torch.isfinite), and "
    "always go on to scaler.step(optimizer) and scaler.update()",
    "all_steps_skipped": "the GradScaler skipped every step: the gradients held inf or NaN in all {n} of your "
    "steps (the scale fell from {before:g} to {after:g}), so no weight trained; they first showed "
    "after the backward at line {at}",
    "all_steps_skipped.no_line": "the GradScaler skipped every step: the gradients held inf or NaN in all {n} of "
    "your steps (the scale fell from {before:g} to {after:g}), so no weight trained",
    "all_steps_skipped.fix": "find what makes a value inf or NaN before that backward (a log or sqrt of zero or "
    "of a negative number, a division by zero, a softmax over a row masked entirely with -inf) and keep it "
    "finite: the scaler can skip such steps, not mend them",
    "not_recovered": "after the overflowed step {step}, none of the {later} later steps changed any weight: the "
    "inf stayed in the gradients, so the scaler skipped every step after it",
    "not_recovered.own": "after the overflowed step {step}, none of the {later} later steps changed any weight, "
    "and on step {own} the loss that went into backward was itself inf or NaN: the run overflows on its own, so the "
    "scaler skipped those steps",
    "not_recovered.fix_own": "find what makes the loss itself inf or NaN on that step (compare it with the loss of "
    "the steps before: something in it grows without bound) and keep it finite: the scaler can skip such steps, "
    "not mend them",
    "not_recovered.fix": "clear every optimizer's gradients before each backward (optimizer.zero_grad("
    "set_to_none=True) for each optimizer, also after a skipped step), so that one overflow "
    "costs one step",
    "backoff_undone": "the scale backed off to {backed_off:g} after the overflow on step {step}, but was back at "
    "{scale:g} after step {later}, sooner than the GradScaler grows it (x{factor:g} per {interval} good steps): "
    "the back-off was undone, so the scale that overflowed is tried again",
    "backoff_undone.fix": "keep one GradScaler and its state for the whole run: do not build a new one, load an "
    "earlier state_dict or set its scale in the step, and call scaler.update() once per step",
    "overflow.fail": "when the gradients overflowed: {findings}",
    "overflow.pass": "an overflowed step ({step}) changed no weight and the scale backed off from {before:g} to "
    "{after:g}",
    # -- ranks ----------------------------------------------------------------------------------------------
    "ranks.params": "rank {rank}'s parameter {name!r}, in {layer}, is {dev:.2%} away from rank 0's (measured "
    "against what training moved it; allowed {tol:.4%}): the ranks trained different models",
    "ranks.scales": "rank {rank}'s loss scale was {mine:g} after step {step}, rank 0's {base:g}",
    "ranks.fail": "{problems}. Ranks that average their gradients and step their optimizers through their own "
    "GradScalers the same way stay identical.",
    "ranks.pass": "all {n} ranks hold the same weights (largest difference {dev:.2g} of an update) and the same loss "
    "scale",
    "ranks_disagree": "rank {rank} ended with other weights than rank 0 ({layer} differs)",
    "ranks_disagree.fix": "average the gradients on every rank (call the DDP model, leave the last micro-batch "
    "outside no_sync()) and step every rank's optimizer and scaler the same way",
    "scales_disagree": "rank {rank}'s loss scale differs from rank 0's after step {step}",
    "scales_disagree.fix": "call scaler.step(optimizer) and scaler.update() on every rank in every step: the "
    "averaged gradients are the same on all ranks, so their scalers agree as long as every "
    "rank runs them",
    # -- profiling a given step (grader/checks/profiling.py) ----------------------------------------------
    "bottleneck.pass": "{answer} names what the grader's profile of the given step shows: {names}",
    "bottleneck.mistakes": {
        "one": "{n} difference from the grader's profile of the given step: {first}",
        "other": "{n} differences from the grader's profile of the given step; the first: {first}",
    },
    "bottleneck_no_answer": "the file assigns no {name} at module level: after profiling the given step, say what "
    "the profile showed",
    "bottleneck_no_answer.fix": 'write, at the top level of the file, {name} = {{"host_sync", ...}} with the names '
    "of what your profile showed ({known})",
    "bottleneck_not_literal": '{name} must be a set (or list) of names written out, e.g. {{"host_sync"}}: the '
    "grader reads it from the file without running the code",
    "bottleneck_not_literal.fix": "write the names themselves, as strings, from: {known}",
    "bottleneck_unknown": "{name!r} is not a name the grader knows",
    "bottleneck_unknown.fix": "use the names {known}",
    "bottleneck_missed": "the grader's profile of the given step shows {what}, but {answer} does not name {name!r}",
    "bottleneck_missed.fix": "add {name!r} to {answer}, and fix it in train_step",
    "bottleneck_not_in_profile": "{answer} names {name!r}, but the grader's profile of the given step shows none",
    "bottleneck_not_in_profile.fix": "name only what the profile shows: read its table again",
    "bottleneck_unjudged": "{name!r} cannot be confirmed on {device}: a CPU has no device memory to copy to or from",
    "bottleneck_unjudged.fix": "it is judged when the lesson is graded on a GPU",
    "bottleneck.saw.host_sync": {
        "one": "{n} host sync per step ({ops}, line {lines} of the given step)",
        "other": "{n} host syncs per step ({ops}, line {lines} of the given step)",
    },
    "bottleneck.saw.float32_matmul": {
        "one": "{n} matmul per step in float32 ({ops}, line {lines} of the given step)",
        "other": "{n} matmuls per step in float32 ({ops}, line {lines} of the given step)",
    },
    "bottleneck.saw.host_device_copy": {
        "one": "{n} copy between host and device per step ({ops}, line {lines} of the given step)",
        "other": "{n} copies between host and device per step ({ops}, line {lines} of the given step)",
    },
    "compile_every_step": "torch.compile was called in {steps} steps: each call wraps the model again (and checks "
    "dynamo's guards again); compiling belongs before the training loop",
    "compile_every_step.fix": "call torch.compile(model) once, before the first step (or keep the compiled model and "
    "reuse it), and call the compiled model in every step",
    "recompiled": "dynamo compiled again at step {step} ({n} steps compiled after the first): something the "
    "compiled code depends on changes between steps (a Python number, a shape, a flag)",
    "recompiled.fix": "keep what the compiled code reads constant across steps (pass changing numbers as tensors), "
    "or mark a changing size dynamic (torch._dynamo.mark_dynamic)",
    "graph_breaks": {
        "one": "the compiled code has {n} graph break: dynamo ran part of it eagerly",
        "other": "the compiled code has {n} graph breaks: dynamo ran parts of it eagerly",
    },
    "graph_breaks.fix": "remove what breaks the graph from the compiled code (.item(), print, data-dependent Python "
    "branches); TORCH_LOGS=graph_breaks names each one",
    "host_sync_cuda_only": "on CUDA the step calls {call} every step, in a branch that runs only on CUDA: the host waits there for the GPU to finish (on a CPU the branch never runs, so the grader read it from the source)",
    "host_sync_cuda_only.note": "on CUDA the step would call {call} every step (a branch that runs only on CUDA): the host waits there for the GPU; harmless for correctness, but it costs time on a GPU",
    "host_sync_cuda_only.fix": "remove it, or read the value on the host only every N steps; synchronize only to time code",
    "matmul_dtypes.pass": "every matmul of the fixed step ran in {dtype} ({n} per step)",
    "matmul_dtypes.mistakes": {
        "one": "{n} matmul per step ran in float32 where autocast would run it in 16-bit: {first}",
        "other": "{n} matmuls per step ran in float32 where autocast would run them in 16-bit; the first: {first}",
    },
    "matmul_dtypes.none": "no matmul was seen in the fixed step, so their dtypes could not be checked",
    "matmul_dtypes.given_numbers": "the trained weights moved like the given step's float32 matmuls, not like 16-bit "
    "ones: measured from the given step's run, they went {toward:.0%} of the way "
    "toward the reference's (a step whose matmuls run in 16-bit goes about 100%). The "
    "16-bit work that was reported did not happen",
    "numbers_of_given_step": "the numbers show the given step's float32 matmuls",
    "numbers_of_given_step.fix": "run every matmul under autocast, and do not patch the grader",
    "matmul.no_module": "an op outside the model's layers ({op})",
    "float32_autocast_disabled": {
        "one": "{layer} ran its matmul in float32 inside a region where autocast was turned off ({op}, {n} time in {steps} steps)",
        "other": "{layer} ran its matmul in float32 inside a region where autocast was turned off ({op}, {n} times in {steps} steps)",
    },
    "float32_autocast_disabled.fix": "remove the autocast(enabled=False) block and the .float() cast around it: "
    "under autocast the layer runs in 16-bit, and autocast keeps the ops that need "
    "float32 (softmax, losses, norms) in float32 by itself",
    "float32_outside_autocast": {
        "one": "{layer} ran its matmul in float32 outside the autocast region ({op}, {n} time in {steps} steps)",
        "other": "{layer} ran its matmul in float32 outside the autocast region ({op}, {n} times in {steps} steps)",
    },
    "float32_outside_autocast.fix": "move it into the `with torch.autocast(...)` block, with the rest of the forward "
    "pass and the loss",
    "float32_under_autocast": {
        "one": "{layer} ran its matmul in float32 although autocast was on ({op}, {n} time in {steps} steps)",
        "other": "{layer} ran its matmul in float32 although autocast was on ({op}, {n} times in {steps} steps)",
    },
    "float32_under_autocast.fix": "do not turn autocast off, or cast to float32, around this op",
    "transfers.not_applicable": "copies between host and device are seen only on a GPU ({device} has no device "
    "memory): not applicable here",
    "transfers.pass": "no copy between host and device in the fixed step ({n} per step; the given step has {given})",
    "transfers.mistakes": {
        "one": "{n} copy between host and device per step is left: {first}",
        "other": "{n} copies between host and device per step are left; the first: {first}",
    },
    "copy_to_device": {
        "one": "the step copies {size} from host memory to the device ({op}, {n} time in {steps} steps)",
        "other": "the step copies {size} from host memory to the device ({op}, {n} times in {steps} steps)",
    },
    "copy_to_device.fix": "make the tensor once, on the device, and reuse it (e.g. keep it in a module-level "
    "variable after the first step); create tensors with device=... rather than moving them",
    "copy_to_host": {
        "one": "the step copies {size} from the device to host memory ({op}, {n} time in {steps} steps)",
        "other": "the step copies {size} from the device to host memory ({op}, {n} times in {steps} steps)",
    },
    "copy_to_host.fix": "keep the tensor on the device; copy to the host only what you print, every N steps",
    # -- checks that could not run ------------------------------------------------------------------------
    "check.not_run": "not run: the code stopped ({kind}) before this check had its evidence",
    "check.not_run_because": "not run: {reason}",
    "check.not_run_overflow": "not run: the step the grader made overflow (step {step}) raised, so the grading "
    "stopped there",
    "check.not_run_overflow_applied": "not run: the step the grader made overflow (step {step}) applied the inf "
    "gradients to the weights, so the steps after it were not run",
}
