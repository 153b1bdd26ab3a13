"""What a worker reports about learner code is bounded before it becomes a finding or a stored result
(grader/judge/protocol.py): lines inside the submitted source, numbers in range, strings cut."""

import json
from pathlib import Path

from grader.judge import protocol

ATTACKS = Path(__file__).resolve().parent / "attacks"
RESULT_BYTES = 256 * 1024  # a result with every cap reached stays well under this


def ints_in(value):
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from ints_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from ints_in(v)


def test_forged_line_numbers_never_reach_a_finding(grade):
    code = (ATTACKS / "huge_line_numbers.py").read_text()
    result = grade("autocast", code)
    doc = json.dumps(result.to_dict())
    assert result.status == "fail"
    assert len(doc) < RESULT_BYTES
    assert all(abs(n) < 2**53 for n in ints_in(result.to_dict()))
    lines = [f.line for c in result.checks for f in c.findings if f.line is not None]
    assert all(1 <= n <= code.count("\n") + 1 for n in lines)


def test_a_huge_exception_message_is_cut_and_its_line_read_from_the_source(grade):
    code = (ATTACKS / "huge_exception.py").read_text()
    result = grade("autocast", code)
    assert result.status == "error" and result.error.kind == "exception"
    assert len(json.dumps(result.to_dict())) < RESULT_BYTES
    assert "[cut: 10000000 characters in all]" in result.error.message
    assert result.error.line == 6 and result.error.source_line == 'raise RuntimeError("x" * 10_000_000)'


def test_an_error_claiming_a_line_outside_the_source_has_no_line():
    code = "def train_step():\n    pass\n"
    report = {
        "kind": "exception",
        "message": "boom",
        "line": 10**30,
        "source_line": "forged",
        "step": 2**70,
        "traceback": "t" * 10**6,
        "events": [{"ev": "backward", "line": 2, "value": 1e308 * 10}],
    }
    out = protocol.bounded_error(report, code, max_events=10)
    assert out["line"] is None and out["source_line"] is None and out["step"] is None
    assert len(out["traceback"]) < protocol.MAX_TRACEBACK_CHARS + 100
    assert out["events"] == [{"ev": "backward", "line": 2, "value": float("inf")}]
    assert protocol.bounded_error({**report, "line": 2}, code, 10)["source_line"] == "pass"


def test_trace_events_keep_only_plain_bounded_fields():
    code = "x = 1\n"
    event = {
        "ev": "function",
        "line": 1,
        "name": "n" * 10_000,
        "in_dtypes": ["float32"] * 1000,
        "big": 10**40,
        "nested": {"a": 1},
        **{f"k{i}": i for i in range(100)},
    }
    out = protocol.bounded_event(event, code)
    assert out["line"] == 1 and len(out["name"]) < protocol.MAX_EVENT_STRING_CHARS + 50
    assert len(out["in_dtypes"]) == protocol.MAX_EVENT_LIST and out["big"] is None and out["nested"] is None
    assert len(out) <= protocol.MAX_EVENT_FIELDS + 2


def test_a_list_of_flat_records_in_an_event_is_kept_bounded_and_never_deeper():
    """A conversion names its modules as records ({"name", "in", "out"}); they reached the lesson's check
    empty, so it saw FP8 layers only through their forwards, which a compiled model never calls."""
    record = {"name": "n" * 10_000, "in": 256, "deep": {"x": 1}, "list": [1], **{f"k{i}": i for i in range(100)}}
    event = {"ev": "float8_convert", "line": 1, "converted": [record] * 1000 + [[record]]}
    out = protocol.bounded_event(event, "x = 1\n")["converted"]
    assert len(out) == protocol.MAX_EVENT_LIST and out[0]["in"] == 256
    assert len(out[0]["name"]) < protocol.MAX_EVENT_STRING_CHARS + 50 and len(out[0]) <= protocol.MAX_EVENT_FIELDS
    assert "deep" not in out[0] and "list" not in out[0]
    assert protocol.bounded_event({"ev": "x", "line": 1, "nested": {"a": 1}}, "x = 1\n")["nested"] is None


def test_an_error_reply_with_a_number_no_format_can_write_is_worded_without_raising():
    """A forged error reply whose `seconds` is 10**400 made `{seconds:.0f}` raise OverflowError: `grader check`
    died and the web app recorded an internal error. Such a parameter is not the grader's: the message is the
    worker's own text, and rendering any parameters never raises."""
    from grader.wording.catalog import render

    forged = {"key": "error.timeout", "params": {"seconds": 10**400}}
    assert protocol.worded_error(forged) is None
    assert protocol.worded_error({"key": "error.timeout", "params": {"seconds": float("inf")}}) is None
    assert protocol.worded_error({"key": "error.timeout", "params": {"seconds": 12}}) is not None
    for lang in ("en", "it", "id"):
        assert render("error.timeout", {"seconds": 10**400}, lang) == "error.timeout"
    reply = {"ok": False, "error": {"kind": "timeout", "message": "slow", "said": forged}}
    try:
        protocol._ok(reply, code="x = 1\n")
    except protocol.StepFailure as failure:
        assert failure.payload["said"] is None and failure.payload["message"] == "slow"
    else:
        raise AssertionError("an error reply must fail the step")
