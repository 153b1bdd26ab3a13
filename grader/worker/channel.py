"""The worker's end of its pipe to the grader: private copies of the process's
original stdin and stdout carry the protocol (grader/worker/wire.py), and
whatever the code prints goes to stderr, which the grader only shows as text."""

from __future__ import annotations

import json
import os
import sys


class Channel:
    def __init__(self):
        self.inp = os.fdopen(os.dup(0), "r", encoding="utf-8")
        self.out = os.fdopen(os.dup(1), "w", encoding="utf-8")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)  # the code's prints land on stderr, never on the protocol
        sys.stdout = sys.stderr

    def read(self) -> dict | None:
        line = self.inp.readline()
        return json.loads(line) if line else None

    def write(self, message: dict):
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()
