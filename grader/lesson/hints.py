"""How many hints a learner has seen, per lesson, so `grader hint ID` shows the
next one each time. Kept in the user's state directory (XDG_STATE_HOME on
Linux, via platformdirs; AMP_DOJO_STATE_DIR overrides it), one small JSON file
written atomically; an unreadable file counts as "none seen" rather than
stopping the lesson."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

STATE_ENV = "AMP_DOJO_STATE_DIR"


def state_file() -> Path:
    folder = os.environ.get(STATE_ENV)
    if not folder:
        from platformdirs import user_state_dir

        folder = user_state_dir("amp-dojo", appauthor=False)
    return Path(folder) / "hints.json"


def _read(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int) and v >= 0}


def _write(path: Path, data: dict[str, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hints-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def seen(lesson_id: str) -> int:
    return _read(state_file()).get(lesson_id, 0)


def reveal_next(lesson_id: str, total: int) -> int:
    """Marks one more hint seen and returns how many are seen now (at most `total`)."""
    path = state_file()
    data = _read(path)
    shown = min(data.get(lesson_id, 0) + 1, total)
    data[lesson_id] = shown
    _write(path, data)
    return shown


def forget(lesson_id: str) -> None:
    path = state_file()
    data = _read(path)
    if data.pop(lesson_id, None) is not None:
        _write(path, data)
