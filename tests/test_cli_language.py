"""The terminal remembers: `grader` speaks the language of --lang, else AMP_DOJO_LANG, else the locale, and every
command it prints as a tip keeps that language (with --lang only where nothing else would choose it again); the
report names checks in that language and says which time it tells."""

import re

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.cli.options import chosen_language

LANG_VARS = ("AMP_DOJO_LANG", "LC_ALL", "LC_MESSAGES", "LANG")
SYNTAX_ERROR = "import torch\n\n\ndef train_step(model, optimizer, inputs, targets, device_type, amp_dtype)\n    pass\n"


@pytest.fixture(autouse=True)
def no_language_set(monkeypatch, tmp_path):
    for name in LANG_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AMP_DOJO_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))  # hints seen are remembered here, not in the home


def invoke(*args, **env):
    return CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        (None, {}, ("en", "default")),
        (None, {"LANG": "it_IT.UTF-8"}, ("it", "locale")),
        (None, {"LANG": "id_ID.UTF-8"}, ("id", "locale")),
        (None, {"LANG": "fr_FR.UTF-8"}, ("en", "default")),
        (None, {"LANG": "C.UTF-8"}, ("en", "default")),
        (None, {"LANG": "it_IT.UTF-8", "LC_MESSAGES": "id_ID"}, ("id", "locale")),
        (None, {"LANG": "id_ID.UTF-8", "LC_MESSAGES": "id_ID", "LC_ALL": "it_IT@euro"}, ("it", "locale")),
        (None, {"LC_ALL": "fr_FR.UTF-8", "LANG": "it_IT.UTF-8"}, ("en", "default")),  # LC_ALL decides, unknown
        (None, {"AMP_DOJO_LANG": "id", "LANG": "it_IT.UTF-8"}, ("id", "env")),
        (None, {"AMP_DOJO_LANG": "xx", "LANG": "it_IT.UTF-8"}, ("it", "locale")),
        ("en", {"AMP_DOJO_LANG": "id", "LANG": "it_IT.UTF-8"}, ("en", "flag")),
    ],
)
def test_the_language_is_the_flag_then_amp_dojo_lang_then_the_locale_then_english(flag, env, expected):
    assert chosen_language(flag, env) == expected


def test_the_locale_alone_makes_the_commands_speak_italian_and_their_tips_need_no_flag():
    out = invoke("hint", "autocast", LANG="it_IT.UTF-8").output
    assert "Suggerimento 1 di 3" in out
    assert "`grader hint autocast` mostra il prossimo" in out and "--lang" not in out


def test_amp_dojo_lang_wins_over_the_locale():
    out = invoke("hint", "autocast", LANG="it_IT.UTF-8", AMP_DOJO_LANG="id").output
    assert "Petunjuk 1 dari 3" in out and "`grader hint autocast` menampilkan petunjuk berikutnya" in out


def test_a_tip_after_lang_keeps_the_flag_so_the_next_command_speaks_the_same_language():
    out = invoke("hint", "autocast", "--lang", "it").output
    assert "`grader hint autocast --lang it` mostra il prossimo" in out
    invoke("hint", "autocast", "--lang", "it")
    done = invoke("hint", "autocast", "--lang", "id").output
    assert "`grader hint autocast --reset --lang id` mulai lagi dari yang pertama" in done
    reset = invoke("hint", "autocast", "--reset", "--lang", "it").output
    assert "il prossimo `grader hint autocast --lang it` riparte dal primo" in reset


def test_a_flag_that_only_repeats_the_locale_is_left_out_of_the_tips():
    out = invoke("hint", "autocast", "--lang", "it", LANG="it_IT.UTF-8").output
    assert "`grader hint autocast` mostra il prossimo" in out


def test_show_and_start_print_their_next_commands_in_the_chosen_language(tmp_path):
    shown = invoke("show", "autocast", "--lang", "id", "--hints", "--quiz").output
    assert "Tugas" in shown and "Petunjuk" in shown and "Jawaban:" in shown
    assert "Periksa dengan: grader check autocast autocast.py --lang id" in shown
    assert "Buntu? grader hint autocast --lang id" in shown and "Lalu: grader quiz autocast --lang id" in shown
    target = tmp_path / "mine.py"
    wrote = invoke("start", "autocast", target, LANG="it_IT.UTF-8").output
    assert wrote.strip() == f"ho creato {target}; modificalo, poi esegui: grader check autocast {target}"
    assert "# TODO: esegui il forward pass e la loss dentro torch.autocast" in target.read_text()  # its comments too


def test_a_syntax_error_in_the_terminal_is_named_shown_whole_with_a_caret_and_never_ran(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(SYNTAX_ERROR)
    result = invoke("check", "autocast", path, "--sandbox", "local", "--device", "cpu", AMP_DOJO_LANG="it")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    heading = next(i for i, ln in enumerate(lines) if "errore di sintassi e non è stato eseguito" in ln)
    assert lines[heading].startswith("ERRORE ")
    assert lines[heading + 1].endswith(f"{path}:4: SyntaxError: expected ':'")
    code = lines[heading + 2]
    assert code.endswith("   4 | def train_step(model, optimizer, inputs, targets, device_type, amp_dtype)")
    assert lines[heading + 3] == " " * len(code) + "^"  # just past the `)`, where the `:` is missing
    summary = next(ln for ln in lines if ln.startswith("="))
    assert "errore di sintassi: il tuo codice non è stato eseguito" in summary
    assert "il tuo codice si è fermato" not in result.output
    assert re.search(r"la valutazione ha richiesto \d+,\d s, l'intero comando \d+,\d s", summary), summary
    assert "Bloccato? `grader hint autocast` mostra un suggerimento" in result.output


def test_the_json_keeps_the_ids_and_the_syntax_errors_column(tmp_path):
    import json

    path = tmp_path / "mine.py"
    path.write_text(SYNTAX_ERROR)
    result = invoke("check", "autocast", path, "--sandbox", "local", "--device", "cpu", "--json", LANG="it_IT")
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "syntax" and error["line"] == 4
    assert error["source_line"] == "def train_step(model, optimizer, inputs, targets, device_type, amp_dtype)"
    assert error["column"] == len(error["source_line"]) + 1


@pytest.mark.parametrize(
    ("lang", "words"),
    [
        (
            "it",
            [
                "Errore: nessuna lezione 'autocastt': forse intendevi 'autocast'?",
                "esiste già; usa --force",
                "Errore: il file",
                "non esiste",
            ],
        ),
        (
            "id",
            [
                "Galat: tidak ada pelajaran 'autocastt': apakah maksud Anda 'autocast'?",
                "sudah ada; gunakan --force",
                "Galat: berkas",
                "tidak ada",
            ],
        ),
    ],
)
def test_the_commands_own_errors_speak_the_locales_language_and_suggest_the_lesson_meant(tmp_path, lang, words):
    locale = {"it": "it_IT.UTF-8", "id": "id_ID.UTF-8"}[lang]
    mistyped = invoke("show", "autocastt", LANG=locale)
    existing = tmp_path / "autocast.py"
    existing.write_text("pass\n")
    exists = invoke("start", "autocast", existing, LANG=locale)
    missing = invoke("check", "autocast", tmp_path / "nowhere.py", LANG=locale)
    assert {mistyped.exit_code, exists.exit_code, missing.exit_code} == {2}
    assert words[0] in mistyped.output and words[1] in exists.output, (mistyped.output, exists.output)
    assert words[2] in missing.output and words[3] in missing.output, missing.output
