# attack: fake a perfect trace in the recorder, then leave with os._exit(0) before the grader can look closer
# applies: all
# expect: error
import gc
import os


def fake_trace():
    from grader.worker.tracing import Recorder

    for obj in gc.get_objects():
        if isinstance(obj, Recorder):
            obj.events[:] = [{"ev": "autocast_enter", "line": 1, "device_type": "cpu", "dtype": "bfloat16",
                              "enabled": True, "deprecated": False},
                             {"ev": "forward", "line": 1, "autocast": True, "dtype": "bfloat16"},
                             {"ev": "autocast_exit", "line": 1, "device_type": "cpu"},
                             {"ev": "backward", "line": 1, "scaled": False, "autocast": False, "value": 1.0},
                             {"ev": "optimizer_step", "line": 1, "via_scaler": False}]


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    fake_trace()
    os._exit(0)
