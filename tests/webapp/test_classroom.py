"""Courses, the instructor dashboard and the gradebook, with scripted verdicts
(webapp_testing.grade_as writes a worker's result into the queue and the real
collector ingests it): who sees what, the counts and medians, the ranking of
the class's mistakes, the CSV, and escaping of learner code and output."""

import csv
import io
import re
import time

import pytest
from webapp_testing import csrf_headers, finding, form, grade_as, make_instructor, signin, signup


def submit(client, lesson="grad_scaler", code="def train_step(*args):\n    return 0.0\n") -> str:
    response = client.post(f"/api/lessons/{lesson}/submissions", json={"code": code}, headers=csrf_headers(client))
    assert response.status_code == 202, response.get_json()
    return response.get_json()["id"]


def create_course(teacher, name="AMP 101", lessons=("grad_scaler", "autocast"), deadlines=None) -> tuple[str, str]:
    data = {"name": name}
    for position, lesson in enumerate(lessons, 1):
        data[f"lesson-{lesson}"] = "on"
        data[f"position-{lesson}"] = str(position)
    for lesson, day in (deadlines or {}).items():
        data[f"deadline-{lesson}"] = day
    response = form(teacher, "/teach/courses/new", data)
    assert response.status_code == 303, response.get_data(as_text=True)[:400]
    url = response.headers["Location"]
    code = re.search(r'data-testid="join-code-value">(\w+)<', teacher.get(url).get_data(as_text=True)).group(1)
    return url, code


@pytest.fixture
def course(app):
    """An instructor's course (grad_scaler then autocast) and three learners who joined it."""
    make_instructor(app, "teacher")
    teacher = app.test_client()
    signin(teacher, "teacher")
    url, code = create_course(teacher, deadlines={"grad_scaler": "2030-01-31"})
    learners = {}
    for name in ("ada", "bob", "cyd"):
        client = app.test_client()
        signup(client, name)
        assert form(client, "/courses/join", {"code": code.lower()}).status_code == 303  # case does not matter
        learners[name] = client
    return {"teacher": teacher, "url": url, "code": code, "learners": learners}


def table_cells(html: str, testid: str, row_attr: str, key: str) -> dict:
    row = re.search(rf'<table[^>]*data-testid="{testid}".*?<tr {row_attr}="{key}"[^>]*>(.*?)</tr>', html, re.S).group(1)
    return dict(re.findall(r'data-testid="([\w-]+)">([^<]*)<', row))


def test_a_learner_joins_with_the_code_and_sees_the_lessons_in_order_with_progress(app, course):
    ada = course["learners"]["ada"]
    sid = submit(ada)
    grade_as(app, sid, "fail", [finding("clip_without_unscale", 9)])
    listing = ada.get("/courses").get_data(as_text=True)
    assert "AMP 101" in listing and "0 of 2 lessons passed" in listing
    page = ada.get(course["url"].replace("/teach", "")).get_data(as_text=True)
    rows = re.findall(r'<tr data-lesson-id="(\w+)" data-progress="(\w+)">', page)
    assert rows == [("grad_scaler", "attempted"), ("autocast", "not_started")]
    assert "Jan\u00a031,\u00a02030" in page  # the deadline as the page's language writes dates
    wrong = form(app.test_client(), "/courses/join", {"code": "NOPE1234"})
    assert wrong.status_code in (302, 404)


def test_the_dashboard_counts_each_lesson_and_ranks_the_mistakes_by_learners(app, course):
    ada, bob, cyd = (course["learners"][n] for n in ("ada", "bob", "cyd"))
    grade_as(app, submit(ada), "fail", [finding("clip_without_unscale", 9), finding("update_missing", 12)])
    grade_as(app, submit(ada), "pass")
    for line in (9, 10):  # two submissions of one learner count once among learners
        grade_as(app, submit(bob), "fail", [finding("update_missing", line)])
    grade_as(app, submit(bob), "fail", [finding("clip_without_unscale", 7, "clip <script>x</script>")])
    grade_as(app, submit(cyd, lesson="autocast"), "fail", [finding("backward_inside_autocast", 4)])
    html = course["teacher"].get(course["url"]).get_data(as_text=True)
    stats = table_cells(html, "lesson-stats", "data-lesson-id", "grad_scaler")
    assert (stats["passed"], stats["attempted"], stats["not-started"]) == ("1", "1", "1")
    autocast = table_cells(html, "lesson-stats", "data-lesson-id", "autocast")
    assert (autocast["passed"], autocast["attempted"], autocast["not-started"]) == ("0", "1", "2")
    ranked = re.findall(r'<tr data-finding-id="(\w+)" data-testid="mistake-row"', html)
    # two learners each for clip_without_unscale and update_missing (3 submissions beat 2), one for the third
    assert ranked == ["update_missing", "clip_without_unscale", "backward_inside_autocast"]
    assert 'data-testid="mistake-chart"' in html and html.count('class="bar"') == 3
    assert "<script>x</script>" not in html and "clip &lt;script&gt;x&lt;/script&gt;" in html
    example = re.search(r'<tr data-finding-id="clip_without_unscale".*?href="([^"]+)"', html, re.S).group(1)
    assert course["teacher"].get(example).status_code == 200  # the most recent occurrence: bob's
    assert "bob" in re.search(r'<tr data-finding-id="clip_without_unscale".*?</tr>', html, re.S).group(0)


def test_median_attempts_and_time_to_pass_are_over_the_learners_who_passed(app, course, monkeypatch):
    from types import SimpleNamespace

    from webapp import store

    start = time.time() + 60  # after the accounts were made, as an account's own submissions are
    clock = [start]
    monkeypatch.setattr(store, "time", SimpleNamespace(time=lambda: clock[0]))  # when each submission is stored
    ada, bob = course["learners"]["ada"], course["learners"]["bob"]
    # ada passes 10 minutes after her first try, at her 2nd; bob after 30, at his 4th
    plan = [
        (ada, 0, "fail"),
        (ada, 10, "pass"),
        (bob, 0, "fail"),
        (bob, 5, "fail"),
        (bob, 6, "fail"),
        (bob, 30, "pass"),
        (bob, 40, "fail"),
    ]
    for client, minutes, status in plan:
        clock[0] = start + 60 * minutes
        grade_as(app, submit(client), status)
    html = course["teacher"].get(course["url"]).get_data(as_text=True)
    row = re.search(r'<tr data-lesson-id="grad_scaler">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r'<td class="num"[^>]*>([^<]*)</td>', row)
    assert cells[4:] == ["3", "20 min"]  # median of 2 and 4 attempts, of 10 and 30 minutes


def test_the_gradebook_has_one_row_per_learner_with_best_score_and_pass_time(app, course):
    ada = course["learners"]["ada"]
    grade_as(app, submit(ada), "fail", score=0.25)
    grade_as(app, submit(ada), "pass", score=1.0)
    grade_as(app, submit(course["learners"]["bob"], lesson="autocast"), "fail", score=0.5)
    response = course["teacher"].get(course["url"] + "/gradebook.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert response.headers["Cache-Control"] == "no-store"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert [r["username"] for r in rows] == ["ada", "bob", "cyd"]
    assert rows[0]["grad_scaler best score"] == "1.0000" and rows[0]["grad_scaler passed at"].endswith("+00:00")
    assert rows[1]["autocast best score"] == "0.5000" and rows[1]["autocast passed at"] == ""
    columns = ("best score", "counted score", "passed at", "deadline", "extended", "late")
    assert rows[2]["grad_scaler best score"] == "" and list(rows[0]) == ["username"] + [
        f"{lesson} {column}" for lesson in ("grad_scaler", "autocast") for column in columns
    ]


def test_learners_get_403_and_other_instructors_404_on_a_courses_instructor_pages(app, course):
    url = course["url"]
    ada = course["learners"]["ada"]
    learner_page = re.search(
        r'href="(/teach/courses/\d+/learners/\d+)"', course["teacher"].get(url).get_data(as_text=True)
    ).group(1)
    pages = [url, url + "/gradebook.csv", learner_page, "/teach/courses/new", "/teach/settings"]
    for page in pages:
        assert ada.get(page).status_code == 403, page
    make_instructor(app, "rival")
    rival = app.test_client()
    signin(rival, "rival")
    for page in pages[:3]:
        assert rival.get(page).status_code == 404, page
    anonymous = app.test_client()
    assert anonymous.get(url).status_code == 302
    assert course["teacher"].get(url + "/learners/999999").status_code == 404


def test_a_permalink_opens_for_its_learner_and_the_courses_instructors_only(app, course):
    ada = course["learners"]["ada"]
    in_course, outside = submit(ada), submit(ada, lesson="grad_accumulation")
    teacher = course["teacher"]
    make_instructor(app, "rival")
    rival = app.test_client()
    signin(rival, "rival")
    bob = course["learners"]["bob"]
    for sid in (in_course, outside):
        assert ada.get(f"/submissions/{sid}").status_code == 200
        for stranger in (rival, bob, app.test_client()):
            assert stranger.get(f"/submissions/{sid}").status_code == 404
            assert stranger.get(f"/api/submissions/{sid}").status_code == 404
    assert teacher.get(f"/submissions/{in_course}").status_code == 200
    assert teacher.get(f"/api/submissions/{in_course}").get_json()["code"]
    assert teacher.get(f"/submissions/{outside}").status_code == 404  # a lesson the course does not have


def test_the_learner_page_shows_every_submission_with_its_code_escaped_and_highlighted(app, course):
    ada = course["learners"]["ada"]
    hostile = "def train_step(*args):\n    print('</pre><script>alert(1)</script>')\n    return 0.0\n"
    first = submit(ada, code=hostile)
    grade_as(app, first, "fail", [finding("clip_without_unscale", 2, "<img src=x onerror=alert(2)>")])
    second = submit(ada)
    teacher = course["teacher"]
    html = teacher.get(course["url"]).get_data(as_text=True)
    page = teacher.get(re.search(r'href="(/teach/courses/\d+/learners/\d+)">ada<', html).group(1)).get_data(
        as_text=True
    )
    assert re.findall(r'data-testid="learner-submission" data-submission-id="(\w+)"', page) == [second, first]
    assert "<script>alert(1)</script>" not in page and "<img src=x" not in page
    assert "&lt;/pre&gt;&lt;script&gt;" in page or "&lt;/pre&gt;" in page
    assert 'class="highlight code-view"' in page and "clip_without_unscale" in page


def test_an_instructor_gets_the_course_form_back_with_the_reason_when_it_is_incomplete(app):
    make_instructor(app, "teacher")
    teacher = app.test_client()
    signin(teacher, "teacher")
    assert form(teacher, "/teach/courses/new", {"name": "Empty"}).status_code == 400
    bad_date = form(teacher, "/teach/courses/new", {"name": "X", "lesson-autocast": "on", "deadline-autocast": "soon"})
    assert bad_date.status_code == 400 and "YYYY-MM-DD" in bad_date.get_data(as_text=True)
    assert "checked" in bad_date.get_data(as_text=True)  # what was picked stays picked


@pytest.mark.parametrize("lang", ["it", "id"])
def test_the_classroom_pages_in_another_language_show_no_english_interface_string(app, course, lang):
    from test_i18n import PLACEHOLDER, ui_strings, visible_text

    from webapp import i18n

    ada, teacher = course["learners"]["ada"], course["teacher"]
    grade_as(app, submit(ada), "fail", [finding("clip_without_unscale", 9)])
    html = teacher.get(course["url"]).get_data(as_text=True)
    learner_page = re.search(r'href="(/teach/courses/\d+/learners/\d+)"', html).group(1)
    catalog = i18n.catalog(lang)
    english = [e for e in ui_strings() if " " in e and not PLACEHOLDER.search(e) and catalog.get(e) != e]
    pages = [
        (teacher, course["url"]),
        (teacher, learner_page),
        (teacher, "/teach/courses/new"),
        (teacher, "/teach/settings"),
        (teacher, "/courses"),
        (ada, "/courses"),
        (ada, course["url"].replace("/teach", "")),
        (app.test_client(), "/signin"),
        (app.test_client(), "/signup"),
    ]
    for client, path in pages:
        client.set_cookie("lang", lang)
        page = client.get(path).get_data(as_text=True)
        assert f'<html lang="{lang}">' in page, path
        text = " ".join(visible_text(page).split())
        left = [e for e in english if e in text]
        assert not left, f"English left on {path} in {lang}: {left}"


def test_work_done_anonymously_before_signing_up_counts_in_the_course(app, course):
    browser = app.test_client()
    early = submit(browser)  # graded while still anonymous
    grade_as(app, early, "fail", [finding("unscale_twice", 11)])
    pending = submit(browser)  # still being graded when the learner signs up
    signup(browser, "dora")
    form(browser, "/courses/join", {"code": course["code"]})
    grade_as(app, pending, "pass")
    html = course["teacher"].get(course["url"]).get_data(as_text=True)
    assert re.search(
        r'<tr data-username="dora">.*?badge-passed">[^<]*</span> <span class="muted submission-count">2 submissions<',
        html,
        re.S,
    )
    assert '<tr data-finding-id="unscale_twice"' in html


def test_an_instructor_reads_the_class_mistakes_in_the_interface_language(app, course):
    ada, teacher = course["learners"]["ada"], course["teacher"]
    english = "gradients were clipped while still multiplied by the loss scale"
    said = {**finding("clip_without_unscale", 13, english), "text": {"message": {"key": "clip_without_unscale"}}}
    grade_as(app, submit(ada), "fail", [said])
    assert english in teacher.get(course["url"]).get_data(as_text=True)
    teacher.set_cookie("lang", "it")
    html = teacher.get(course["url"]).get_data(as_text=True)
    assert "i gradienti sono stati limitati" in html and english not in html
    learner_page = re.search(r'href="(/teach/courses/\d+/learners/\d+)"', html).group(1)
    assert "i gradienti sono stati limitati" in teacher.get(learner_page).get_data(as_text=True)


def dense_code(size: int = 65536) -> str:
    """The largest submission, of the kind that highlights into the most HTML (a span per token)."""
    line = "a=b+c*d-e/f%g|h&i^j\n"
    return ("def train_step(*args):\n    return 0.0\n" + line * (size // len(line)))[: size - 1] + "\n"


def test_the_learner_page_is_paged_and_stays_small_with_30_submissions_of_64_kib(app, course):
    ada = course["learners"]["ada"]
    code = dense_code()
    sids = [submit(ada, code=code) for _ in range(30)]
    teacher = course["teacher"]
    html = teacher.get(course["url"]).get_data(as_text=True)
    url = re.search(r'href="(/teach/courses/\d+/learners/\d+)">ada<', html).group(1)
    first = teacher.get(url)
    page = first.get_data(as_text=True)
    assert first.status_code == 200 and len(first.get_data()) < 1_000_000, len(first.get_data())
    shown = re.findall(r'data-testid="learner-submission" data-submission-id="(\w+)"', page)
    assert len(shown) == 20 and set(shown) <= set(sids)
    assert "Page 1 of 2" in page and f'href="{url}?page=2"' in page and "Newer" not in page
    more = re.search(r'data-testid="code-more">(\d+) more lines: see the full results.', page)
    assert more and int(more.group(1)) > 3000
    second = teacher.get(url + "?page=2").get_data(as_text=True)
    rest = re.findall(r'data-testid="learner-submission" data-submission-id="(\w+)"', second)
    assert len(rest) == 10 and not set(rest) & set(shown) and set(rest) | set(shown) == set(sids)
    assert "Page 2 of 2" in second and f'href="{url}?page=1"' in second and "Older" not in second
    assert teacher.get(url + "?page=99").status_code == 200 and teacher.get(url + "?page=x").status_code == 200


def test_a_permalink_highlights_the_head_of_a_large_submission_and_shows_the_rest_plain(app, course):
    ada = course["learners"]["ada"]
    code = dense_code() + "print('</pre><b>end</b>')\n"
    code = code[-65000:]
    sid = submit(ada, code=code)
    response = ada.get(f"/submissions/{sid}")
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and len(response.get_data()) < 1_000_000, len(response.get_data())
    assert 'class="highlight code-view"' in page and 'data-testid="code-truncated"' in page
    assert "is shown without highlighting" in page
    assert "print(&#39;&lt;/pre&gt;&lt;b&gt;end&lt;/b&gt;&#39;)" in page and "<b>end</b>" not in page


def test_wrong_join_codes_are_limited_per_account_and_a_classmate_who_did_not_guess_still_joins(make_app):
    app = make_app(JOIN_FAILURES_PER_ACCOUNT=3, JOIN_FAILURES_PER_IP=5)
    make_instructor(app, "teacher")
    teacher = app.test_client()
    signin(teacher, "teacher")
    _url, code = create_course(teacher)
    guessers = [app.test_client() for _ in range(2)]
    for n, guesser in enumerate(guessers):
        signup(guesser, f"guesser{n}")
    for _ in range(3):
        assert form(guessers[0], "/courses/join", {"code": "NOPE2345"}).status_code == 404
    limited = form(guessers[0], "/courses/join", {"code": code})  # past the account's limit: even the right code
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    assert "Too many wrong join codes" in limited.get_data(as_text=True)
    for expected in (404, 404, 429):  # the address has 5 wrong codes now: one try for an account that guessed
        assert form(guessers[1], "/courses/join", {"code": "NOPE2345"}).status_code == expected
    classmate = app.test_client()  # behind the same address, no wrong code of their own
    signup(classmate, "classmate")
    assert form(classmate, "/courses/join", {"code": code}).status_code == 303
    italian = app.test_client()
    signup(italian, "italiano")
    italian.set_cookie("lang", "it")
    assert form(italian, "/courses/join", {"code": "NOPE2345"}).status_code == 404
    assert "Troppi codici di iscrizione sbagliati" in form(italian, "/courses/join", {"code": code}).get_data(
        as_text=True
    )
