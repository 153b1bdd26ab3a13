"""Where the grader keeps what it measured once and may reuse: trusted runs, and what this CPU's oneDNN runs."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """Where `grader check` keeps trusted runs: $AMP_DOJO_CACHE, else $XDG_CACHE_HOME/amp-dojo, else
    ~/.cache/amp-dojo."""
    if os.environ.get("AMP_DOJO_CACHE"):
        return Path(os.environ["AMP_DOJO_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "amp-dojo" / "trusted-runs"
