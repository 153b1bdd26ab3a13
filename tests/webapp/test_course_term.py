"""Running a term's course (issue 22, item 6): an instructor edits a course (name, lessons and their order,
deadlines) and deletes it, removes a learner, and is warned of a deadline already past; a pass after its
lesson's deadline is marked late on the dashboard, on the learner's pages and in the gradebook; the class's
mistakes count the results' errors by kind; the mistake's example page says whose submission and when, marks
the cited line and leads back to the dashboard. Scripted verdicts, as in test_classroom.py."""

import csv
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest
from webapp_testing import base_config, csrf_headers, finding, form, grade_as, make_instructor, signin, signup

from webapp import create_app
from webapp.db import connect

CODE = "def train_step(*args):\n    x = 1\n    return 0.0\n"


def submit(client, lesson="grad_scaler", code=CODE) -> str:
    response = client.post(f"/api/lessons/{lesson}/submissions", json={"code": code}, headers=csrf_headers(client))
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def grade_error(app, sid: str, kind: str, line: int | None = None, message: str = "it stopped"):
    """A result whose code could not be run to the end (docs/results.md, the error object)."""
    from webapp.collector import collect

    queue = app.extensions["amp_dojo_queue"]
    assert queue.claim(sid, 1, "scripted")
    result = {
        "status": "error",
        "score": 0.0,
        "checks": [
            {
                "id": "call_order",
                "status": "error",
                "message": "not run",
                "measured": {},
                "threshold": None,
                "weight": 1.0,
                "findings": [],
            }
        ],
        "output": "",
        "plots": {},
        "error": {"kind": kind, "message": message, "line": line, "source_line": None, "step": None, "parts": []},
    }
    queue.put("result", sid, 1, {"status": "done", "result": result, "worker": "scripted", "attempt": 1})
    db = connect(app.config["DATABASE"])
    try:
        collect(db, queue, app.config, [sid])
    finally:
        db.close()


def course_form(name="AMP 101", lessons=("grad_scaler", "autocast"), deadlines=None) -> dict:
    data = {"name": name}
    for position, lesson in enumerate(lessons, 1):
        data[f"lesson-{lesson}"] = "on"
        data[f"position-{lesson}"] = str(position)
    for lesson, day in (deadlines or {}).items():
        data[f"deadline-{lesson}"] = day
    return data


@pytest.fixture
def term(app):
    """A course (grad_scaler due 2020-01-31, long past; autocast due 2030-01-31) and two learners in it."""
    make_instructor(app, "teacher")
    teacher = app.test_client()
    signin(teacher, "teacher")
    response = form(
        teacher, "/teach/courses/new", course_form(deadlines={"grad_scaler": "2020-01-31", "autocast": "2030-01-31"})
    )
    assert response.status_code == 303
    url = response.headers["Location"]
    page = teacher.get(url).get_data(as_text=True)
    code = re.search(r'data-testid="join-code-value">(\w+)<', page).group(1)
    learners = {}
    for name in ("ada", "bob"):
        client = app.test_client()
        signup(client, name)
        assert form(client, "/courses/join", {"code": code}).status_code == 303
        learners[name] = client
    course_id = int(url.rsplit("/", 1)[1])
    return {"teacher": teacher, "url": url, "id": course_id, "code": code, "learners": learners, "first_page": page}


def user_id(app, username: str) -> int:
    db = connect(app.config["DATABASE"])
    try:
        return db.execute("SELECT id FROM users WHERE username = ?", (username,)).fetchone()[0]
    finally:
        db.close()


def gradebook(term) -> list[dict]:
    response = term["teacher"].get(term["url"] + "/gradebook.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))


# ---------- editing, deleting, removing ----------


def test_creating_a_course_with_a_past_deadline_warns_on_the_dashboard_once(term):
    warning = re.search(r'data-testid="notice-warning">([^<]*)<', term["first_page"])
    assert warning and "Jan\u00a031,\u00a02020" in warning.group(1) and "late" in warning.group(1)
    assert "2030" not in warning.group(1)
    assert 'data-testid="notice-warning"' not in term["teacher"].get(term["url"]).get_data(as_text=True)


def test_the_instructor_edits_the_name_the_lessons_their_order_and_the_deadlines(app, term):
    teacher = term["teacher"]
    edit = teacher.get(term["url"] + "/edit").get_data(as_text=True)
    assert 'value="AMP 101"' in edit and 'value="2020-01-31"' in edit  # the form starts from the course as it is
    data = course_form("AMP 102", lessons=("autocast", "grad_scaler"), deadlines={"grad_scaler": "2031-06-30"})
    response = form(teacher, term["url"] + "/edit", data)
    assert response.status_code == 303 and response.headers["Location"] == term["url"]
    page = teacher.get(term["url"]).get_data(as_text=True)
    assert "<h1>AMP 102</h1>" in page and 'data-testid="notice-saved"' in page
    assert 'data-testid="notice-warning"' not in page  # no deadline is past any more
    assert re.findall(r'<tr data-lesson-id="(\w+)">', page) == ["autocast", "grad_scaler"]
    assert (
        "Jun\u00a030,\u00a02031" in page
        and "Jan\u00a031,\u00a02020" not in page
        and "Jan\u00a031,\u00a02030" not in page
    )
    lessons_seen = term["learners"]["ada"].get(f"/courses/{term['id']}").get_data(as_text=True)
    assert re.findall(r'<tr data-lesson-id="(\w+)"', lessons_seen) == ["autocast", "grad_scaler"]


def test_editing_to_a_past_deadline_is_saved_with_a_visible_warning(term):
    data = course_form(lessons=("grad_scaler",), deadlines={"grad_scaler": "2021-03-01"})
    response = form(term["teacher"], term["url"] + "/edit", data, follow_redirects=True)
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and "Mar\u00a01,\u00a02021" in page
    assert re.search(r'data-testid="notice-warning">[^<]*Mar\u00a01,\u00a02021[^<]*already past', page)
    assert re.findall(r'<tr data-lesson-id="(\w+)">', page) == ["grad_scaler"]  # autocast taken out


def test_an_edit_without_a_name_or_a_lesson_is_refused_and_changes_nothing(term):
    for data in (course_form(name="  "), course_form(lessons=())):
        response = form(term["teacher"], term["url"] + "/edit", data)
        assert response.status_code == 400 and 'data-testid="form-error"' in response.get_data(as_text=True)
    page = term["teacher"].get(term["url"]).get_data(as_text=True)
    assert "<h1>AMP 101</h1>" in page and re.findall(r'<tr data-lesson-id="(\w+)">', page) == [
        "grad_scaler",
        "autocast",
    ]


def test_deleting_a_course_needs_its_confirmation_then_it_is_gone_for_everyone(app, term):
    teacher, ada = term["teacher"], term["learners"]["ada"]
    sid = submit(ada)
    grade_as(app, sid, "pass")
    assert form(teacher, term["url"] + "/delete", {}).status_code == 400  # the box not ticked
    assert teacher.get(term["url"]).status_code == 200
    response = form(teacher, term["url"] + "/delete", {"confirm": "yes"})
    assert response.status_code == 303 and response.headers["Location"].endswith("/courses")
    assert teacher.get(term["url"]).status_code == 404
    assert "AMP 101" not in teacher.get("/courses").get_data(as_text=True)
    assert ada.get(f"/courses/{term['id']}").status_code == 404
    assert "AMP 101" not in ada.get("/courses").get_data(as_text=True)
    assert ada.get(f"/submissions/{sid}").status_code == 200  # the learner's work stays theirs


def test_a_removed_learner_leaves_the_dashboard_and_the_gradebook_and_may_join_again(app, term):
    teacher, bob = term["teacher"], term["learners"]["bob"]
    bob_id = user_id(app, "bob")
    remove = f"{term['url']}/learners/{bob_id}/remove"
    assert form(teacher, remove, {}).status_code == 303  # not confirmed: back to the learner's page, still there
    assert '<tr data-username="bob">' in teacher.get(term["url"]).get_data(as_text=True)
    response = form(teacher, remove, {"confirm": "yes"}, follow_redirects=True)
    page = response.get_data(as_text=True)
    assert 'data-testid="notice-saved"' in page and '<tr data-username="bob">' not in page
    assert [r["username"] for r in gradebook(term)] == ["ada"]
    assert teacher.get(f"{term['url']}/learners/{bob_id}").status_code == 404
    assert bob.get(f"/courses/{term['id']}").status_code == 404
    assert form(bob, "/courses/join", {"code": term["code"]}).status_code == 303


def test_another_instructor_cannot_edit_delete_or_remove_and_a_learner_is_refused(app, term):
    make_instructor(app, "other")
    other = app.test_client()
    signin(other, "other")
    bob_id = user_id(app, "bob")
    assert other.get(term["url"] + "/edit").status_code == 404
    assert form(other, term["url"] + "/edit", course_form("Taken")).status_code == 404
    assert form(other, term["url"] + "/delete", {"confirm": "yes"}).status_code == 404
    assert form(other, f"{term['url']}/learners/{bob_id}/remove", {"confirm": "yes"}).status_code == 404
    ada = term["learners"]["ada"]
    assert ada.get(term["url"] + "/edit").status_code == 403
    assert form(ada, term["url"] + "/delete", {"confirm": "yes"}).status_code == 403
    page = term["teacher"].get(term["url"]).get_data(as_text=True)
    assert "<h1>AMP 101</h1>" in page and '<tr data-username="bob">' in page


def test_the_forms_need_the_csrf_token(term):
    teacher = term["teacher"]
    assert teacher.post(term["url"] + "/delete", data={"confirm": "yes"}).status_code == 403
    assert teacher.post(term["url"] + "/edit", data=course_form("No token")).status_code == 403
    assert teacher.get(term["url"]).status_code == 200


# ---------- late passes ----------


def test_a_pass_after_the_deadline_is_marked_late_on_the_dashboard_learner_pages_and_gradebook(app, term):
    ada, bob = term["learners"]["ada"], term["learners"]["bob"]
    grade_as(app, submit(ada), "fail")
    grade_as(app, submit(ada), "pass")  # grad_scaler was due 2020-01-31: late
    grade_as(app, submit(ada, lesson="autocast"), "pass")  # due 2030-01-31: on time
    grade_as(app, submit(bob), "fail")  # not passed: overdue, but not a late pass
    teacher = term["teacher"]
    page = teacher.get(term["url"]).get_data(as_text=True)
    ada_row = re.search(r'<tr data-username="ada">(.*?)</tr>', page, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", ada_row, re.S)
    assert 'data-testid="late"' in cells[0] and "2 submissions" in cells[0]
    assert 'data-testid="late"' not in cells[1] and "1 submission<" in cells[1]
    assert 'data-testid="late"' not in re.search(r'<tr data-username="bob">(.*?)</tr>', page, re.S).group(1)
    late = re.search(r'<tr data-lesson-id="grad_scaler">.*?data-testid="passed-late">(\d+)<', page, re.S).group(1)
    assert late == "1"
    learner_page = teacher.get(f"{term['url']}/learners/{user_id(app, 'ada')}").get_data(as_text=True)
    row = re.search(r'<tr data-lesson-id="grad_scaler"[^>]*>(.*?)</tr>', learner_page, re.S).group(1)
    assert 'data-testid="late"' in row
    own = ada.get(f"/courses/{term['id']}").get_data(as_text=True)
    rows = dict(re.findall(r'<tr data-lesson-id="(\w+)"[^>]*>(.*?)</tr>', own, re.S))
    assert 'data-testid="late"' in rows["grad_scaler"] and 'data-testid="late"' not in rows["autocast"]
    by_name = {r["username"]: r for r in gradebook(term)}
    assert by_name["ada"]["grad_scaler deadline"] == "2020-01-31T23:59:59+00:00"
    assert by_name["ada"]["grad_scaler late"] == "yes" and by_name["ada"]["autocast late"] == "no"
    assert (
        by_name["bob"]["grad_scaler late"] == "" and by_name["bob"]["autocast deadline"] == "2030-01-31T23:59:59+00:00"
    )


def test_moving_a_deadline_later_takes_the_late_mark_away(app, term):
    grade_as(app, submit(term["learners"]["ada"]), "pass")
    assert 'data-testid="late"' in term["teacher"].get(term["url"]).get_data(as_text=True)
    data = course_form(deadlines={"grad_scaler": "2040-01-01"})
    assert form(term["teacher"], term["url"] + "/edit", data).status_code == 303
    assert 'data-testid="late"' not in term["teacher"].get(term["url"]).get_data(as_text=True)
    assert gradebook(term)[0]["grad_scaler late"] == "no"


# ---------- the class's mistakes: errors by kind, the example page ----------


def test_syntax_errors_and_exceptions_are_counted_among_the_mistakes_by_kind(app, term):
    ada, bob = term["learners"]["ada"], term["learners"]["bob"]
    grade_error(app, submit(ada), "syntax", 2, "line 2: SyntaxError: expected ':'")
    grade_error(app, submit(bob), "syntax", 3, "line 3: SyntaxError: invalid syntax")
    grade_error(app, submit(bob), "exception", 2, "line 2: NameError: name 'y' is not defined")
    grade_error(app, submit(ada), "cancelled")  # the learner stopped it: not a mistake
    grade_as(app, submit(ada), "fail", [finding("update_missing", 3)])
    page = term["teacher"].get(term["url"]).get_data(as_text=True)
    ranked = re.findall(r'<tr data-finding-id="([\w:]+)" data-testid="mistake-row"', page)
    assert ranked == ["error:syntax", "error:exception", "update_missing"]
    row = re.search(r'<tr data-finding-id="error:syntax".*?</tr>', page, re.S).group(0)
    assert 'data-testid="error-kind">Syntax error<' in row and re.findall(r'<td class="num"[^>]*>(\d+)</td>', row) == [
        "2",
        "2",
    ]
    assert 'data-finding-id="error:cancelled"' not in page
    assert re.search(
        r'<div class="mistake-bar" data-finding-id="error:syntax">\s*<span class="mistake-label">Syntax error ', page
    )  # the chart's label is the words, not the id
    signin_it = form(term["teacher"], "/lang", {"lang": "it", "next": "/"})
    assert signin_it.status_code == 303
    italian = term["teacher"].get(term["url"]).get_data(as_text=True)
    assert 'data-testid="error-kind">Errore di sintassi<' in italian


def test_the_example_page_says_whose_and_when_marks_the_cited_line_and_leads_back_to_the_dashboard(app, term):
    bob = term["learners"]["bob"]
    sid = submit(bob)
    grade_as(app, sid, "fail", [finding("clip_without_unscale", 2, "clipped before unscale_")])
    page = term["teacher"].get(term["url"]).get_data(as_text=True)
    href = re.search(
        r'<tr data-finding-id="clip_without_unscale".*?href="([^"]+)" data-testid="mistake-example"', page, re.S
    )
    assert href.group(1) == f"{term['url']}/submissions/{sid}?line=2"
    example = term["teacher"].get(href.group(1))
    assert example.status_code == 200
    html = example.get_data(as_text=True)
    assert re.search(r'data-testid="submission-author">By bob<', html)
    assert re.search(
        r'data-testid="submission-time">submitted \w{3}\s\d\d?,\s\d{4},\s\d\d?:\d\d:\d\d\W[AP]M\sUTC<', html
    )
    marked = re.search(r'<span class="hll" data-testid="cited-line">(.*?)\n', html, re.S).group(1)
    assert ">2</span>" in marked and "x" in marked  # line 2, `x = 1`, and only it
    assert html.count('class="hll"') == 1
    crumbs = re.search(r'<p class="breadcrumb"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert f'href="{term["url"]}" data-testid="back-to-dashboard"' in crumbs and "/lessons/" not in crumbs
    assert 'data-testid="cited-finding"' in html and "clipped before unscale_" in html


def test_the_example_page_is_only_for_the_courses_instructors_and_its_lessons(app, term):
    ada = term["learners"]["ada"]
    in_course = submit(ada)
    grade_as(app, in_course, "fail", [finding("update_missing", 2)])
    data = course_form(lessons=("grad_scaler",))
    assert form(term["teacher"], term["url"] + "/edit", data).status_code == 303
    outside = submit(ada, lesson="autocast")  # a lesson the course no longer has
    make_instructor(app, "other")
    other = app.test_client()
    signin(other, "other")
    assert other.get(f"{term['url']}/submissions/{in_course}").status_code == 404
    assert term["teacher"].get(f"{term['url']}/submissions/{outside}").status_code == 404
    assert term["teacher"].get(f"{term['url']}/submissions/nope").status_code == 404
    assert ada.get(f"{term['url']}/submissions/{in_course}").status_code == 403
    no_line = term["teacher"].get(f"{term['url']}/submissions/{in_course}?line=abc")
    assert no_line.status_code == 200 and 'class="hll"' not in no_line.get_data(as_text=True)


# ---------- wording ----------


@pytest.mark.parametrize(
    ("lang", "value", "shown"),
    [("en", 3.0, "3"), ("en", 1, "1"), ("en", 2.5, "2.5"), ("it", 2.5, "2,5"), ("id", 4.0, "4"), ("en", None, "–")],
)
def test_medians_are_written_one_way_whole_numbers_without_decimals(app, lang, value, shown):
    from webapp.dashboard import median

    with app.test_request_context("/", headers={"Cookie": f"lang={lang}"}):
        assert median(value) == shown


# ---------- the migration ----------


def test_migration_0005_counts_the_errors_of_submissions_graded_before_it(tmp_path):
    old = (Path(__file__).resolve().parents[1] / "fixtures" / "schema_before_migrations.sql").read_text()
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(old)
    for sid, kind in (("aa11", "syntax"), ("bb22", "cancelled"), ("cc33", "timeout")):
        result = {"status": "error", "score": 0.0, "checks": [], "error": {"kind": kind, "message": "m", "line": 4}}
        db.execute(
            "INSERT INTO submissions (id, learner, lesson, code, status, attempt, created_at, queued_at, result, "
            "result_status, score) VALUES (?, 'anon-1', 'grad_scaler', 'x', 'done', 1, 100.0, 100.0, ?, 'error', 0)",
            (sid, json.dumps(result)),
        )
    db.commit()
    db.close()
    create_app(base_config(tmp_path, DATABASE=str(path)))
    db = connect(str(path))
    try:
        found = db.execute("SELECT submission_id, check_id, finding_id, line FROM findings ORDER BY 1").fetchall()
        assert [tuple(r) for r in found] == [
            ("aa11", "error", "error:syntax", 4),
            ("cc33", "error", "error:timeout", 4),
        ]
    finally:
        db.close()


def backdate(app, learner: str, when: float) -> None:
    """As if the anonymous learner's submissions (and record) had been made at `when`."""
    db = connect(app.config["DATABASE"])
    try:
        db.execute("UPDATE submissions SET created_at = ? WHERE learner = ?", (when, learner))
        db.execute(
            "UPDATE learner_lessons SET first_at = ?, passed_at = CASE WHEN passed_at IS NULL THEN NULL ELSE ? END "
            "WHERE learner = ?",
            (when, when, learner),
        )
    finally:
        db.close()


def test_a_pass_handed_over_at_sign_up_counts_from_the_sign_up_so_a_late_account_gets_no_on_time_pass(app, term):
    before_deadline = 1579046400.0  # 2020-01-15: grad_scaler is due 2020-01-31, autocast 2030-01-31
    browser = app.test_client()  # someone passes anonymously, on time ...
    grade_as(app, submit(browser), "pass")
    grade_as(app, submit(browser, lesson="autocast"), "pass")
    queued = app.test_client()  # ... and someone else sends a right answer on time that is graded later
    queued_sid = submit(queued)
    for client in (browser, queued):
        with client.session_transaction() as session:
            backdate(app, session["learner"], before_deadline)
    for client, name in ((browser, "latecomer"), (queued, "slowpoke")):  # accounts made after the deadline
        signup(client, name)
        assert form(client, "/courses/join", {"code": term["code"]}).status_code == 303
    grade_as(app, queued_sid, "pass")
    by_name = {r["username"]: r for r in gradebook(term)}
    assert by_name["latecomer"]["grad_scaler late"] == "yes" and by_name["slowpoke"]["grad_scaler late"] == "yes"
    assert by_name["latecomer"]["autocast late"] == "no"  # handed over before its deadline: on time
    own = browser.get(f"/courses/{term['id']}").get_data(as_text=True)
    rows = dict(re.findall(r'<tr data-lesson-id="(\w+)"[^>]*>(.*?)</tr>', own, re.S))
    assert 'data-testid="late"' in rows["grad_scaler"] and 'data-testid="late"' not in rows["autocast"]
    history = browser.get("/api/lessons/grad_scaler/submissions").get_json()["submissions"]
    assert [s["created_at"] for s in history] == [before_deadline]  # the submission keeps its real time
