"""The English wording of the host syncs a profiling lesson's census counts in the fixed step (grader/checks/
profiling.py): one finding per cause, each named for what the census saw. Part of the catalog
(grader/wording/catalog.py), kept apart so that each file reads on a few screens."""

HOST_SYNCS: dict[str, str | dict[str, str]] = {
    "host_syncs.pass": "no host sync in the fixed step ({n} per step; the given step has {given})",
    "host_syncs.mistakes": {
        "one": "{n} host sync per step is left: {first}",
        "other": "{n} host syncs per step are left; the first: {first}",
    },
    "host_sync_value": {
        "one": "the step reads a tensor's value on the host ({op}, {n} time in {steps} steps): .item(), float(), int(), bool(), an f-string or `if tensor:` make the host wait until the device has finished everything queued before it",
        "other": "the step reads a tensor's value on the host ({op}, {n} times in {steps} steps): .item(), float(), int(), bool(), an f-string or `if tensor:` make the host wait until the device has finished everything queued before it",
    },
    "host_sync_value.fix": "keep the value on the device (loss.detach()); read it on the host only every N steps, or "
    "after training",
    "host_sync_print": {
        "one": "the step prints or converts a tensor on the host ({op}, {n} time in {steps} steps): print(tensor), str(), tolist() and numpy() copy it to the host and wait for the device",
        "other": "the step prints or converts a tensor on the host ({op}, {n} times in {steps} steps): print(tensor), str(), tolist() and numpy() copy it to the host and wait for the device",
    },
    "host_sync_print.fix": "do not print tensors inside the step; keep them on the device and print plain numbers "
    "every N steps",
    "host_sync_data_dependent": {
        "one": "the step runs an op whose output size depends on the values ({op}, {n} time in {steps} steps): a boolean mask or nonzero() makes the host wait to learn the size",
        "other": "the step runs an op whose output size depends on the values ({op}, {n} times in {steps} steps): a boolean mask or nonzero() makes the host wait to learn the size",
    },
    "host_sync_op_value": {
        "one": "an op called on this line reads a tensor's value on the host by itself ({op}, {n} time in {steps} steps), with no .item() or float() of yours: it needs the value, typically to know the size of its output, and the host waits for the device to compute it",
        "other": "an op called on this line reads a tensor's value on the host by itself ({op}, {n} times in {steps} steps), with no .item() or float() of yours: it needs the value, typically to know the size of its output, and the host waits for the device to compute it",
    },
    "host_sync_op_value.fix": "give the op the number it would read, known on the host (F.one_hot(x, num_classes=...); "
    "counts into a tensor of known size with index_add_ rather than torch.bincount, which reads its largest value even "
    "with minlength), or compute it once before training",
    "host_sync_data_dependent.fix": "keep shapes fixed: multiply by the mask or use torch.where instead of indexing "
    "with it",
    "host_sync_explicit": {
        "one": "the step calls {op} ({n} time in {steps} steps): the host waits until the device has finished all its work",
        "other": "the step calls {op} ({n} times in {steps} steps): the host waits until the device has finished all its work",
    },
    "host_sync_explicit.fix": "remove it: work on one stream runs in order by itself; synchronize only to time code",
    "host_sync_to_host": {
        "one": "the step copies a tensor to the host ({op}, {n} time in {steps} steps), which waits for the device",
        "other": "the step copies a tensor to the host ({op}, {n} times in {steps} steps), which waits for the device",
    },
    "host_sync_to_host.fix": "keep it on the device; copy to the host only what you print, every N steps",
}
