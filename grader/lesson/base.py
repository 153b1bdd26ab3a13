"""What every part of the lesson format is made of: a strict model (a misspelt
field is an error with its line, never a silently ignored key), and a text in
one language or several."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LANGUAGES = ("en", "it", "id")
DEVICE_KINDS = ("cpu", "cuda")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# A text is either one string (English) or a map of language code to string.
Text = str | dict[Literal["en", "it", "id"], str]


def localize(text: Text, lang: str = "en") -> str:
    """Pick `lang`, falling back to English so a partial translation still shows."""
    if isinstance(text, str):
        return text
    return text.get(lang) or text["en"]


def require_english(value):
    if isinstance(value, dict) and "en" not in value:
        raise ValueError("a translated text must include 'en'")
    return value


IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


# -- per-device expectations: an example or a lesson mutant graded on some device kinds only --------------------
# (a mistake only CUDA shows: optimizer state loaded before the model moved to the GPU; a CPU kernel's own way
# with fully masked rows). Elsewhere `grader validate` skips it and prints this reason.
DeviceKinds = list[Literal["cpu", "cuda"]] | None


def devices_field():
    return Field(
        None,
        min_length=1,
        description="the device kinds it is graded on (cpu, cuda); on another, `grader validate` skips it and "
        "says why (default: every device)",
    )


def skipped_here(devices: DeviceKinds, kind: str, where: str) -> str | None:
    """Why an example or lesson mutant graded only on `devices` is skipped on `kind`; None where it is graded."""
    if devices is None or kind in devices:
        return None
    return f"graded on {' and '.join(devices)} only ({where}.devices), not on {kind}"
