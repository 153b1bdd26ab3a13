"""What every part of the lesson format is made of: a strict model (a misspelt
field is an error with its line, never a silently ignored key), and a text in
one language or several."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

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
