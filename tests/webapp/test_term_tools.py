"""The dashboard as an instructor reads it (mistakes in words with their lesson, dates through the locale, the
gradebook's stable header and Excel's BOM), the roster import, and the similarity report computed by the queue."""

import csv
import io
import re

from class_solutions import renamed, solutions
from test_classroom import course, submit  # noqa: F401 - the course fixture
from webapp_testing import finding, form, grade_as, signin

ISO_DAY = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def visible(html: str) -> str:
    """The page's text, without tags, attribute values, scripts and form fields' values."""
    html = re.sub(r"<script.*?</script>|<style.*?</style>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_the_dashboard_words_mistakes_with_their_lesson_and_dates_in_the_locale(app, course):  # noqa: F811
    teacher, url, ada = course["teacher"], course["url"], course["learners"]["ada"]
    said = {**finding("backward_inside_autocast", 4), "text": {"message": {"key": "backward_inside_autocast"}}}
    grade_as(app, submit(ada, lesson="autocast"), "fail", [said])
    grade_as(app, submit(ada), "pass")
    teacher.set_cookie("lang", "it")
    html = teacher.get(url).get_data(as_text=True)
    row = re.search(r'<tr data-finding-id="backward_inside_autocast".*?</tr>', html, re.S).group(0)
    assert "backward() viene chiamato dentro il blocco autocast" in row  # the catalog's short wording, in Italian
    assert re.search(r'data-testid="mistake-lesson">[^<]*autocast', row, re.I)  # the lesson it happened in
    assert '<code class="finding-id" data-testid="finding-id"' in row  # the id: secondary, copyable
    learner_page = re.search(r'<tr data-username="ada">\s*<th scope="row"><a href="([^"]+)"', html).group(1)
    for page in (html, teacher.get(learner_page).get_data(as_text=True)):
        text = visible(page)
        assert not ISO_DAY.search(text), ISO_DAY.search(text)
        assert "31\u00a0gen\u00a02030" in text  # the deadline, unbreakable, as Italian writes it
    raw = teacher.get(url + "/gradebook.csv?bom=1").get_data()
    assert raw.startswith("\ufeff".encode())
    header = next(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline=""), delimiter=";"))
    assert header[:7] == ["username"] + [
        f"grad_scaler {c}" for c in ("best score", "counted score", "passed at", "deadline", "extended", "late")
    ]  # machine names whatever the page's language
    localized = teacher.get(url + "/gradebook.csv?headers=localized").get_data(as_text=True)
    assert localized.split(";")[0] != "username" and not localized.startswith("\ufeff")


def test_a_roster_makes_accounts_with_reset_links_and_enrolls_existing_learners(app, course):  # noqa: F811
    teacher, url = course["teacher"], course["url"]
    roster = "username;email\nzoe;zoe@example.org\nbob;\nbad name!;\nteacher;\n"
    page = form(teacher, url + "/roster", {"roster": (io.BytesIO(("\ufeff" + roster).encode()), "roster.csv")})
    html = page.get_data(as_text=True)
    statuses = dict(re.findall(r'<tr data-username="([^"]+)" data-status="(\w+)"', html))
    assert statuses == {"zoe": "created", "bob": "joined", "bad name!": "refused", "teacher": "refused"}
    link = re.search(r'data-testid="roster-link"|value="(http[^"]+/reset-password/[^"]+)"', html)
    links = re.findall(r'value="(http[^"]+/reset-password/[^"]+)"', html)
    assert link and len(links) == 1
    zoe = app.test_client()
    assert zoe.get(links[0].split("localhost", 1)[1]).status_code == 200
    assert re.search(r'<tr data-username="zoe">', teacher.get(url).get_data(as_text=True))


def test_a_similarity_report_ranks_the_renamed_copy_first_and_shows_the_shared_lines(app, course):  # noqa: F811
    teacher, url = course["teacher"], course["url"]
    ada, bob, cyd = (course["learners"][n] for n in ("ada", "bob", "cyd"))
    original = solutions(30)[7]
    for client, code in ((ada, original), (bob, renamed(original)), (cyd, solutions(30)[25])):
        grade_as(app, submit(client, code=code), "pass")
    assert form(teacher, url + "/similarity/grad_scaler", {}).status_code == 303
    pending = teacher.get(url + "/similarity").get_data(as_text=True)
    assert 'data-testid="similarity-pending"' in pending
    queue = app.extensions["amp_dojo_queue"]
    (task,) = [t for t in queue.huey.pending() if t.name == "similarity"]
    queue.huey.execute(task)  # the queue's task, as a worker runs it (the gradings' tasks are scripted here)
    html = teacher.get(url + "/similarity").get_data(as_text=True)
    first = re.search(r'<tr data-testid="similar-pair">\s*<th scope="row"><a href="([^"]+)">([^<]+)</a>', html)
    assert set(first.group(2).split(" · ")) == {"ada", "bob"}
    side = teacher.get(first.group(1)).get_data(as_text=True)
    assert side.count('data-testid="overlap"') >= 8
    assert signin(app.test_client(), "ada") and ada.get(first.group(1)).status_code == 403
