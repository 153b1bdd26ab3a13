"""The English wording of FSDP2's findings (grader/checks/fsdp_calls.py), each with its fix. Part of the
catalog (grader/wording/catalog.py), kept apart so that each file reads on a few screens."""

FSDP: dict[str, str | dict[str, str]] = {
    "fsdp_not_sharded": "fully_shard was never called on the model or its blocks, so each of the {ranks} ranks "
    "trains a whole copy of its own on its share of the batch and nothing averages their gradients",
    "fsdp_not_sharded.fix": "in prepare, call `fully_shard(block, mesh=mesh, mp_policy=policy)` on each block, then "
    "`fully_shard(model, mesh=mesh, mp_policy=policy)` on the model itself",
    "fsdp_only_root": "the blocks are not FSDP units of their own (only the model, a list of blocks sharded as one "
    "unit, or modules without parameters were sharded): its one FSDP unit all-gathers every weight before the "
    "forward and keeps them all until its backward, so no communication overlaps the computation and each rank "
    "holds the whole unsharded model at its peak",
    "fsdp_only_root.fix": "call fully_shard on each block first (`for block in model[:-1]: fully_shard(block, ...)`), "
    "then on the model: each block becomes a unit that is gathered just before it runs and freed after",
    "fsdp_root_not_sharded": "the blocks were sharded but the model itself was not: the parameters outside the blocks "
    "(here the output layer) stay whole on every rank and their gradients are never averaged, so the ranks drift "
    "apart",
    "fsdp_root_not_sharded.fix": "after the blocks, call `fully_shard(model, mesh=mesh, mp_policy=policy)` on the "
    "model itself",
    "fsdp_no_policy": "a fully_shard call had no MixedPrecisionPolicy with a 16-bit param_dtype, so its module's "
    "forward and backward ran in float32",
    "fsdp_no_policy.fix": "pass `mp_policy=MixedPrecisionPolicy(param_dtype={dtype}, reduce_dtype=torch.float32)` "
    "to every fully_shard call",
    "fsdp_policy_wrong_dtype": "the policy computes in {dtype} (param_dtype={dtype}) where this lesson trains in "
    "{expected}: the step runs in another precision than the one it is graded for",
    "fsdp_policy_wrong_dtype.float16": "the policy computes in float16 (param_dtype=float16) where this lesson trains "
    "in {expected}: float16 has a far narrower range than bfloat16, so without a GradScaler the small gradients "
    "flush to zero in the backward",
    "fsdp_policy_wrong_dtype.fix": "pass `param_dtype=torch.{expected}` to every MixedPrecisionPolicy",
    "fsdp_reduce_16bit": "the policy reduces the gradients in {dtype} (reduce_dtype={dtype}): the reduce-scatter "
    "sums every rank's gradient in 16-bit, losing the low bits of each, and nothing reports it",
    "fsdp_reduce_16bit.unset": "the policy sets no reduce_dtype, so the gradients are reduced in param_dtype "
    "({dtype}): the reduce-scatter sums every rank's gradient in 16-bit, losing the low bits of each, and nothing "
    "reports it",
    "fsdp_reduce_16bit.fix": "add `reduce_dtype=torch.float32` to the MixedPrecisionPolicy: compute in 16-bit, "
    "reduce in float32",
    "fsdp_cast_model": "the model was cast to 16-bit ({dtypes}) before sharding, so FSDP shards 16-bit weights "
    "and the optimizer updates them in 16-bit: small updates are lost",
    "fsdp_cast_model.fix": "leave the model in float32: the policy's param_dtype casts the gathered weights for "
    "compute, and the sharded float32 weights stay the optimizer's master copy",
    "fsdp_optimizer_before_shard": "the optimizer was built before fully_shard: fully_shard replaces every "
    "parameter with a DTensor shard, so this optimizer holds the old tensors, which never get a gradient, and "
    "its step leaves the model as it was",
    "fsdp_optimizer_before_shard.stale_list": "the optimizer was built after fully_shard, but from parameters "
    "taken before it (a list made earlier): fully_shard replaced every parameter with a DTensor shard, so this "
    "optimizer holds the old tensors, which never get a gradient, and its step leaves the model as it was",
    "fsdp_optimizer_before_shard.fix": "build the optimizer after the last fully_shard call, from "
    "`model.parameters()` (the DTensor shards)",
    "fsdp_autocast_over_policy": "the step ran under torch.autocast on top of the policy's {dtype}: the policy "
    "already runs the forward and backward in {dtype}, so autocast adds a second set of casts and changes "
    "which ops run in 16-bit",
    "fsdp_autocast_over_policy.fix": "remove the `with torch.autocast(...)` block: with FSDP's MixedPrecisionPolicy "
    "the policy is the mixed precision",
    "fsdp_scaler_bf16": "the step scaled the loss with a GradScaler, but its gradients are bfloat16, whose range is "
    "float32's: a GradScaler only multiplies and divides by the scale (and syncs to look for infs)",
    "fsdp_scaler_bf16.fix": "drop the GradScaler: call `loss.backward()` and `optimizer.step()` directly (a "
    "GradScaler is for float16)",
    "fsdp_local_grad_norm": "the step took a gradient's local piece with .to_local(): a norm of the local pieces is "
    "this rank's alone, so each of the {ranks} ranks clips its piece by a different factor",
    "fsdp_local_grad_norm.fix": "clip through the sharded parameters: `torch.nn.utils.clip_grad_norm_("
    "model.parameters(), max_norm)` computes the norm of the whole gradient across the ranks",
}
