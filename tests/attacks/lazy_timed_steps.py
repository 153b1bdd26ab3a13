# exercise: timed
# attack: do the work in the steps the grader compares, skip it in the timed steps (return the last loss),
#         and catch up later when the parameters are saved
# applies: all
# expect: fail|error
import torch.nn.functional as F

calls, last, owed = [0], [None], []
COMPARED_STEPS = 4


def real_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    calls[0] += 1
    if calls[0] <= COMPARED_STEPS:
        last[0] = real_step(model, optimizer, inputs, targets)
        return last[0]
    if not owed:
        original = model.state_dict

        def catch_up(*args, **kwargs):
            while owed:
                real_step(model, optimizer, *owed.pop(0))
            return original(*args, **kwargs)

        model.state_dict = catch_up
    owed.append((inputs.clone(), targets.clone()))
    return last[0]
