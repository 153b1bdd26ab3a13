"""One OpenAI-compatible chat-completions client (vLLM, llama.cpp's llama-server, Ollama all speak it), over
httpx: always a bearer key, always streamed (`stream: true`, server-sent events ending in `data: [DONE]`), with a
connect, a per-read and a whole-answer timeout. Whatever goes wrong becomes a TutorUnavailable naming what the
learner can be told (down, slow, refused): the page never sees a 500 or waits for ever."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from webapp.i18n import noop_gettext

DOWN = noop_gettext("The tutor cannot be reached right now. Try again later; your result above still holds.")
SLOW = noop_gettext("The tutor took too long to answer. Try again later, or ask a shorter question.")
REFUSED = noop_gettext("The tutor's model server refused this site's request: tell your instructor.")
GARBLED = noop_gettext("The tutor's answer could not be read. Try again later.")


class TutorUnavailable(Exception):
    """The model gave no usable answer; `message` is an interface string (worded by the caller)."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(detail or message)
        self.message = message


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # with its /v1
    model: str
    api_key: str
    connect_s: float = 5.0
    read_s: float = 30.0
    total_s: float = 90.0
    max_tokens: int = 400
    temperature: float = 0.2


def endpoint_from(config) -> Endpoint | None:
    """The configured endpoint, or None: no TUTOR_BASE_URL, no tutor."""
    base = (config.get("TUTOR_BASE_URL") or "").strip().rstrip("/")
    if not base:
        return None
    return Endpoint(
        base_url=base,
        model=str(config.get("TUTOR_MODEL") or "default"),
        api_key=str(config.get("TUTOR_API_KEY") or "none"),  # always a key: some servers refuse a request without
        connect_s=float(config.get("TUTOR_CONNECT_TIMEOUT_S", 5)),
        read_s=float(config.get("TUTOR_READ_TIMEOUT_S", 30)),
        total_s=float(config.get("TUTOR_ANSWER_TIMEOUT_S", 90)),
        max_tokens=int(config.get("TUTOR_MAX_TOKENS", 400)),
    )


def stream_chat(
    endpoint: Endpoint, messages: list[dict], transport: httpx.BaseTransport | None = None
) -> Iterator[str]:
    """The answer's text, piece by piece as the server sends it. Raises TutorUnavailable (before or between
    pieces); stops at `[DONE]`, at a finish_reason, or at the end of the stream."""
    body = {
        "model": endpoint.model,
        "messages": messages,
        "stream": True,
        "max_tokens": endpoint.max_tokens,
        "temperature": endpoint.temperature,
    }
    timeout = httpx.Timeout(endpoint.read_s, connect=endpoint.connect_s)
    deadline = time.monotonic() + endpoint.total_s
    headers = {"Authorization": f"Bearer {endpoint.api_key}", "Accept": "text/event-stream"}
    try:
        with httpx.Client(timeout=timeout, transport=transport) as http:
            with http.stream("POST", f"{endpoint.base_url}/chat/completions", json=body, headers=headers) as reply:
                if reply.status_code in (401, 403):
                    raise TutorUnavailable(REFUSED, f"HTTP {reply.status_code}")
                if reply.status_code != 200:
                    raise TutorUnavailable(DOWN, f"HTTP {reply.status_code}")
                for line in reply.iter_lines():
                    if time.monotonic() > deadline:
                        raise TutorUnavailable(SLOW, "the whole answer took too long")
                    text, finished = _piece(line)
                    if text:
                        yield text
                    if finished:
                        return
    except httpx.TimeoutException as exc:
        raise TutorUnavailable(SLOW, str(exc)) from None
    except httpx.HTTPError as exc:  # refused connection, reset, bad URL
        raise TutorUnavailable(DOWN, str(exc)) from None


def _piece(line: str) -> tuple[str, bool]:
    """(text, finished) of one server-sent-events line; comments, blank lines and other fields carry nothing."""
    if not line.startswith("data:"):
        return "", False
    data = line[5:].strip()
    if data == "[DONE]":
        return "", True
    try:
        choice = json.loads(data)["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        if '"error"' in data:
            raise TutorUnavailable(DOWN, data[:200]) from None
        raise TutorUnavailable(GARBLED, data[:200]) from None
    delta = choice.get("delta") or choice.get("message") or {}
    return str(delta.get("content") or ""), bool(choice.get("finish_reason"))
