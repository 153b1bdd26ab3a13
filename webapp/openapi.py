"""The JSON API as an OpenAPI 3.1 document, served at /api/openapi.json. It is
written by hand next to the code it describes, and tests/webapp/test_api_fuzz.py
checks it against the app's routes (every /api route described, nothing
described that does not exist) and fuzzes every operation it lists."""

from __future__ import annotations

ERROR = {
    "description": "the request was refused; `error` says why",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
LESSON_ID = {"name": "lesson_id", "in": "path", "required": True, "schema": {"type": "string"}}
SID = {
    "name": "sid",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "a submission id (only the learner who sent it can read it)",
}
LANG = {
    "name": "lang",
    "in": "query",
    "schema": {"enum": ["en", "it", "id"]},
    "description": "language of lesson texts (default: the lang cookie, else en)",
}
CSRF = {
    "name": "X-CSRF-Token",
    "in": "header",
    "required": True,
    "schema": {"type": "string"},
    "description": "the session's token from GET /api/session (not sent with Authorization: Bearer)",
}
AFTER = {
    "name": "after",
    "in": "query",
    "schema": {"type": "integer", "minimum": 0},
    "description": "only progress events with a larger id",
}


def _ok(description: str, schema: dict | None = None) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema or {"type": "object"}}}}


def document() -> dict:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "AMP Dojo API",
            "version": "1",
            "description": "Lessons, graded submissions with live progress, and quiz answers. Unsafe methods need "
            "the session cookie and its CSRF token, or a personal access token (`Authorization: Bearer ampd_...`, "
            "made on the account page) which may only submit and read its account's submissions and GET /api/me. "
            "Every refusal is a 4xx JSON `{error}`.",
        },
        "paths": {
            "/api/session": {
                "get": {
                    "summary": "start the anonymous session; its CSRF token",
                    "responses": {"200": _ok("the token and the header to send it in")},
                }
            },
            "/api/me": {
                "get": {
                    "summary": "the signed-in account (by session or access token): username, role, token",
                    "responses": {
                        "200": _ok("{username, role, token: whether an access token signed it in}"),
                        "401": ERROR,
                    },
                }
            },
            "/api/lessons": {
                "get": {
                    "summary": "every lesson with this learner's progress",
                    "parameters": [LANG],
                    "responses": {"200": _ok("{lessons: [...]}")},
                }
            },
            "/api/lessons/{lesson_id}": {
                "get": {
                    "summary": "one lesson's public content (never its reference solution)",
                    "parameters": [LESSON_ID, LANG],
                    "responses": {"200": _ok("the lesson"), "404": ERROR},
                }
            },
            "/api/lessons/{lesson_id}/submissions": {
                "get": {
                    "summary": "this learner's submissions of a lesson, newest first",
                    "parameters": [LESSON_ID],
                    "responses": {"200": _ok("{submissions: [...]}"), "404": ERROR},
                },
                "post": {
                    "summary": "submit code for grading",
                    "parameters": [LESSON_ID, CSRF],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["code"],
                                    "properties": {"code": {"type": "string"}},
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": _ok("accepted: id, status, position, urls, no_grader_running, no_grader_notice"),
                        "400": ERROR,
                        "403": ERROR,
                        "404": ERROR,
                        "413": ERROR,
                        "429": ERROR,
                        "503": ERROR,
                    },
                },
            },
            "/api/submissions/{sid}": {
                "get": {
                    "summary": "a submission: status, queue position, progress events, result (its messages in the "
                    "learner's language); no_grader_running (and no_grader_notice, in that language) while it waits "
                    "with no grading worker alive",
                    "parameters": [SID, AFTER, LANG],
                    "responses": {"200": _ok("the submission"), "404": ERROR},
                }
            },
            "/api/submissions/{sid}/cancel": {
                "post": {
                    "summary": "stop a queued or running grading; the submission ends without a verdict",
                    "parameters": [SID, CSRF],
                    "responses": {"200": _ok("the submission, cancelled"), "403": ERROR, "404": ERROR, "409": ERROR},
                }
            },
            "/api/submissions/{sid}/stream": {
                "get": {
                    "summary": "live progress as server-sent events (queued, progress, check, done)",
                    "parameters": [
                        SID,
                        {"name": "last_event_id", "in": "query", "schema": {"type": "integer"}},
                        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer"}},
                    ],
                    "responses": {
                        "200": {"description": "text/event-stream", "content": {"text/event-stream": {}}},
                        "404": ERROR,
                        "429": ERROR,
                    },
                }
            },
            "/api/submissions/{sid}/tutor": {
                "post": {
                    "summary": "ask the tutor (docs/tutor.md) about one's own graded submission; the answer as "
                    "server-sent events: delta {text}, replace {text} (the leak guard's reply instead), error "
                    "{message}, done {left}. 404 where the server has no tutor",
                    "parameters": [SID, LANG, CSRF],
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["question"],
                                    "properties": {
                                        "question": {"type": "string"},
                                        "hints_opened": {"type": "integer"},
                                        "history": {"type": "array", "items": {"type": "object"}},
                                    },
                                }
                            }
                        }
                    },
                    "responses": {
                        "200": {"description": "text/event-stream", "content": {"text/event-stream": {}}},
                        **{status: ERROR for status in ("400", "403", "404", "409", "429", "503")},
                    },
                }
            },
            "/api/quiz/{lesson_id}/{index}": {
                "post": {
                    "summary": "answer a quiz question; a first wrong answer may be retried before it is explained",
                    "parameters": [
                        LESSON_ID,
                        {"name": "index", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 0}},
                        CSRF,
                        LANG,
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["choice"],
                                    "properties": {
                                        "choice": {"type": "integer", "minimum": 0},
                                        "attempt": {"type": "integer", "minimum": 1},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _ok("{correct, retry?, answer?, explanation?}"),
                        "400": ERROR,
                        "403": ERROR,
                        "404": ERROR,
                    },
                }
            },
            "/api/openapi.json": {"get": {"summary": "this document", "responses": {"200": _ok("OpenAPI 3.1")}}},
        },
        "components": {
            "securitySchemes": {"accessToken": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}
            },
        },
    }
