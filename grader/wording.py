"""A check's measured values against its thresholds, in words a learner reads
("update vs FP32 0.43%, needs at most 5.00%"), instead of the result
document's keys, and the report's own phrases (badges, stages, the summary).
The terminal report and the notebook extension use it; it is the one place to
word these, and it knows nothing of how they are laid out (grader/report.py)."""

from __future__ import annotations

from grader.results import ERROR, FAIL, NOT_APPLICABLE, PASS, CheckResult, GradingResult, SubmissionError


def pct(value: float) -> str:
    return f"{value:.2%}" if abs(value) < 0.1 else f"{value:.1%}"


def size(n: float) -> str:
    return f"{n / 2**20:.1f} MiB" if abs(n) >= 102400 else f"{n / 1024:.1f} KiB"


def measured_in_words(check: CheckResult, lang: str = "en") -> list[str]:
    """English for now, whatever `lang`: the message catalog brings the other languages."""
    m, t = check.measured, check.threshold or {}
    out = []
    if check.id == "parity" and "max_loss_rel_diff" in m:
        out.append(f"loss vs FP32 {pct(m['max_loss_rel_diff'])} (step {m.get('at_step')}), needs at most "
                   f"{pct(t['loss_rtol'])}")
        if m.get("max_update_rel_diff") is not None:
            out.append(f"update vs FP32 {pct(m['max_update_rel_diff'])} (worst: {m.get('worst_param')}), needs at "
                       f"most {pct(t['update_rtol'])}")
    elif check.id == "coverage" and "fraction_16bit" in m:
        out.append(f"matmul FLOPs in 16-bit {pct(m['fraction_16bit'])}, needs at least {pct(t['min_fraction'])}")
        if "distance_toward_amp" in m and m.get("distance_to_fp32", 1) <= m.get("distance_near", 0):
            out.append(f"weights moved {pct(m['distance_toward_amp'])} of the way from the FP32 run toward a "
                       "mixed-precision run (about 100% when the 16-bit work is real)")
    elif check.id == "memory" and "ratio" in m:
        out.append(f"peak memory {size(m['peak_bytes'])}, {pct(m['ratio'])} of the FP32 baseline's, needs at most "
                   f"{pct(t['max_ratio'])}")
        if m.get("retained_bytes_per_step"):
            out.append(f"kept alive after each step: at most {size(max(m['retained_bytes_per_step']))}")
    elif check.id == "overflow" and "params_changed" in m:
        out.append(f"overflowed step {m['step']}: {m['params_changed']} weight tensors changed (needs 0), scale "
                   f"{m['scale_before']:g} -> {m['scale_after']:g} (needs to drop)")
    elif check.id == "speedup" and "speedup" in m:
        out.append(f"speedup {m['speedup']:.2f}x (95% interval {m['ci95_low']:.2f}x to {m['ci95_high']:.2f}x over "
                   f"{m['rounds']} rounds), needs a lower bound of at least {t['min_speedup']:.2f}x")
    return out


# The report's own words (badges, stages, headings, the summary), in every lesson language. The phrases the
# web app also shows are worded as it words them. A missing translation falls back to English.
WORDS: dict[str, dict[str, str]] = {
    "en": {
        "verdict.pass": "PASS", "verdict.fail": "FAIL", "verdict.error": "ERROR", "verdict.not_applicable": "N/A",
        "count.pass": "{n} passed", "count.fail": "{n} failed", "count.error": "{n} not run",
        "count.not_applicable": "{n} not applicable",
        "summary.pass": "passed", "summary.fail": "failed", "summary.error": "your code stopped before the end",
        "score": "score {n}%",
        "header": "{lesson} on {device} ({dtype}), sandbox {sandbox}",
        "mistake": "mistake", "note": "note", "fix": "fix:",
        "printed": "What your code printed", "printed_more": "... {n} more lines",
        "stage.static": "reading your code", "stage.baseline": "running the FP32 baseline",
        "stage.starting": "starting your code", "stage.steps": "training and comparing with FP32: {total} steps",
        "stage.step": "training and comparing with FP32: step {done} of {total}",
        "stage.trusted": "finishing the FP32 baseline and the reference run",
        "stage.timing": "timing against the baseline", "stage.timing_round": "timing against the baseline: round {n}",
        "stage.so_far": "{x}x so far", "stage.check": "check {check}: {verdict}",
        "stage.done": "done", "stage.interrupted": "interrupted",
        "local_sandbox": "sandbox: local (your code runs unisolated, as you: fine for your own code only)",
        "watching": "watching {file}: save it to grade again (Ctrl+C stops)",
        "changed": "{file} changed: grading again", "missing": "{file} is gone: waiting for it to come back",
        "stopped_watching": "stopped watching {file}",
        "hint": "Hint {shown} of {total}", "hints_done": "All hints shown ({total} of {total})",
        "hints_reset": "hints of {lesson} forgotten: the next `grader hint {lesson}` starts from the first",
        "hints_more": "`grader hint {lesson}` shows the next one",
        "hints_again": "`grader hint {lesson} --reset` starts again from the first",
        "quiz.question": "Question {n} of {total}", "quiz.prompt": "Your answer ({letters})",
        "quiz.bad_choice": "answer with one of {letters}", "quiz.right": "Right.", "quiz.wrong": "Not quite.",
        "quiz.retry": "Think again and try another answer.", "quiz.answer_was": "The answer is {letter}).",
        "quiz.summary": "{right} of {total} right at the first try",
        "error.syntax": "Your code has a syntax error", "error.import": "Your code failed while it was being imported",
        "error.entrypoint": "The function to grade is missing",
        "error.signature": "The function has the wrong parameters",
        "error.exception": "Your code raised an exception", "error.return": "The function did not return the loss",
        "error.nonfinite": "The loss became NaN or infinite", "error.oom": "Your code used more memory than allowed",
        "error.exit": "Your code ended the process", "error.timeout": "Your code ran for too long",
        "error.crash": "The process running your code crashed",
        "error.tampering": "Your code replaced the grader's instruments",
        "error.protocol": "Your code disturbed the grader's channel",
        "error.internal": "The grader could not prepare the run", "error.other": "Your code stopped ({kind})",
        "cell_line": "cell line {n}", "chart.title": "Loss: your code vs the FP32 baseline",
        "chart.yours": "your code", "chart.baseline": "FP32 baseline", "chart.step": "step",
        "notebook.grading": "Grading {lesson}: {stage}",
        "notebook.next_cell": "The next cell holds the starter under `%%grade {lesson}`: complete it and run it.",
        "task": "Task", "write": "Write",
    },
    "it": {
        "verdict.pass": "OK", "verdict.fail": "NO", "verdict.error": "ERRORE", "verdict.not_applicable": "N/A",
        "count.pass": "{n} superati", "count.fail": "{n} non superati", "count.error": "{n} non eseguiti",
        "count.not_applicable": "{n} non applicabili",
        "summary.pass": "superato", "summary.fail": "non superato",
        "summary.error": "il tuo codice si è fermato prima della fine",
        "score": "punteggio {n}%",
        "header": "{lesson} su {device} ({dtype}), sandbox {sandbox}",
        "mistake": "errore", "note": "nota", "fix": "come correggere:",
        "printed": "Cosa ha stampato il tuo codice", "printed_more": "... altre {n} righe",
        "stage.static": "lettura del tuo codice", "stage.baseline": "esecuzione della baseline FP32",
        "stage.starting": "avvio del tuo codice", "stage.steps": "addestramento e confronto con FP32: {total} step",
        "stage.step": "addestramento e confronto con FP32: step {done} di {total}",
        "stage.trusted": "completamento della baseline FP32 e dell'esecuzione di riferimento",
        "stage.timing": "misurazione dei tempi rispetto alla baseline",
        "stage.timing_round": "misurazione dei tempi rispetto alla baseline: turno {n}",
        "stage.so_far": "{x}x finora", "stage.check": "controllo {check}: {verdict}",
        "stage.done": "fatto", "stage.interrupted": "interrotta",
        "local_sandbox": "sandbox: local (il tuo codice gira senza isolamento, come te: va bene solo per il tuo "
                         "codice)",
        "watching": "osservo {file}: salvalo per valutarlo di nuovo (Ctrl+C per smettere)",
        "changed": "{file} è cambiato: nuova valutazione", "missing": "{file} non c'è più: aspetto che ritorni",
        "stopped_watching": "smesso di osservare {file}",
        "hint": "Suggerimento {shown} di {total}",
        "hints_done": "Tutti i suggerimenti sono visibili ({total} di {total})",
        "hints_reset": "suggerimenti di {lesson} dimenticati: il prossimo `grader hint {lesson}` riparte dal primo",
        "hints_more": "`grader hint {lesson}` mostra il prossimo",
        "hints_again": "`grader hint {lesson} --reset` riparte dal primo",
        "quiz.question": "Domanda {n} di {total}", "quiz.prompt": "La tua risposta ({letters})",
        "quiz.bad_choice": "rispondi con una tra {letters}", "quiz.right": "Giusto.", "quiz.wrong": "Non proprio.",
        "quiz.retry": "Riflettici ancora e prova un'altra risposta.", "quiz.answer_was": "La risposta è {letter}).",
        "quiz.summary": "{right} di {total} giuste al primo tentativo",
        "error.syntax": "Il tuo codice contiene un errore di sintassi",
        "error.import": "Il tuo codice ha generato un errore durante l'importazione",
        "error.entrypoint": "Manca la funzione da valutare",
        "error.signature": "La funzione ha i parametri sbagliati",
        "error.exception": "Il tuo codice ha sollevato un'eccezione",
        "error.return": "La funzione non ha restituito la loss",
        "error.nonfinite": "La loss è diventata NaN o infinita",
        "error.oom": "Il tuo codice ha usato più memoria del consentito",
        "error.exit": "Il tuo codice ha terminato il processo",
        "error.timeout": "Il tuo codice è stato eseguito troppo a lungo",
        "error.crash": "Il processo che eseguiva il tuo codice è andato in crash",
        "error.tampering": "Il tuo codice ha sostituito gli strumenti di misura del correttore automatico",
        "error.protocol": "Il tuo codice ha disturbato il canale del correttore automatico",
        "error.internal": "Il correttore automatico non è riuscito a preparare l'esecuzione",
        "error.other": "Il tuo codice si è fermato ({kind})",
        "cell_line": "riga {n} della cella", "chart.title": "Loss: il tuo codice rispetto alla baseline FP32",
        "chart.yours": "il tuo codice", "chart.baseline": "baseline FP32", "chart.step": "step",
        "notebook.grading": "Valutazione di {lesson}: {stage}",
        "notebook.next_cell": "La cella successiva contiene il codice iniziale sotto `%%grade {lesson}`: "
                              "completalo ed eseguilo.",
        "task": "Compito", "write": "Scrivi",
    },
    "id": {
        "verdict.pass": "LULUS", "verdict.fail": "GAGAL", "verdict.error": "ERROR",
        "verdict.not_applicable": "N/A",
        "count.pass": "{n} lulus", "count.fail": "{n} gagal", "count.error": "{n} tidak dijalankan",
        "count.not_applicable": "{n} tidak berlaku",
        "summary.pass": "lulus", "summary.fail": "gagal", "summary.error": "kode Anda berhenti sebelum selesai",
        "score": "skor {n}%",
        "header": "{lesson} pada {device} ({dtype}), sandbox {sandbox}",
        "mistake": "kesalahan", "note": "catatan", "fix": "perbaikan:",
        "printed": "Yang dicetak oleh kode Anda", "printed_more": "... {n} baris lagi",
        "stage.static": "membaca kode Anda", "stage.baseline": "menjalankan baseline FP32",
        "stage.starting": "memulai kode Anda", "stage.steps": "melatih dan membandingkan dengan FP32: {total} step",
        "stage.step": "melatih dan membandingkan dengan FP32: step {done} dari {total}",
        "stage.trusted": "menyelesaikan baseline FP32 dan eksekusi referensi",
        "stage.timing": "mengukur waktu dibandingkan baseline",
        "stage.timing_round": "mengukur waktu dibandingkan baseline: putaran {n}",
        "stage.so_far": "{x}x sejauh ini", "stage.check": "pemeriksaan {check}: {verdict}",
        "stage.done": "selesai", "stage.interrupted": "dihentikan",
        "local_sandbox": "sandbox: local (kode Anda berjalan tanpa isolasi, sebagai Anda: hanya untuk kode Anda "
                         "sendiri)",
        "watching": "memantau {file}: simpan untuk menilai lagi (Ctrl+C untuk berhenti)",
        "changed": "{file} berubah: menilai lagi", "missing": "{file} hilang: menunggu sampai ada lagi",
        "stopped_watching": "berhenti memantau {file}",
        "hint": "Petunjuk {shown} dari {total}",
        "hints_done": "Semua petunjuk sudah ditampilkan ({total} dari {total})",
        "hints_reset": "petunjuk {lesson} dilupakan: `grader hint {lesson}` berikutnya mulai dari yang pertama",
        "hints_more": "`grader hint {lesson}` menampilkan petunjuk berikutnya",
        "hints_again": "`grader hint {lesson} --reset` mulai lagi dari yang pertama",
        "quiz.question": "Pertanyaan {n} dari {total}", "quiz.prompt": "Jawaban Anda ({letters})",
        "quiz.bad_choice": "jawab dengan salah satu dari {letters}", "quiz.right": "Benar.",
        "quiz.wrong": "Belum tepat.", "quiz.retry": "Pikirkan lagi dan coba jawaban lain.",
        "quiz.answer_was": "Jawabannya {letter}).", "quiz.summary": "{right} dari {total} benar pada percobaan pertama",
        "error.syntax": "Kode Anda mengandung kesalahan sintaks", "error.import": "Kode Anda gagal saat diimpor",
        "error.entrypoint": "Fungsi yang akan dinilai tidak ada",
        "error.signature": "Parameter fungsi tidak sesuai", "error.exception": "Kode Anda memunculkan exception",
        "error.return": "Fungsi tidak mengembalikan loss", "error.nonfinite": "Loss menjadi NaN atau tak hingga",
        "error.oom": "Kode Anda menggunakan memori melebihi batas", "error.exit": "Kode Anda menghentikan proses",
        "error.timeout": "Kode Anda berjalan terlalu lama",
        "error.crash": "Proses yang menjalankan kode Anda mengalami crash",
        "error.tampering": "Kode Anda mengganti instrumen pengukuran penilai otomatis",
        "error.protocol": "Kode Anda mengganggu saluran penilai otomatis",
        "error.internal": "Penilai otomatis tidak dapat menyiapkan eksekusi",
        "error.other": "Kode Anda berhenti ({kind})",
        "cell_line": "baris {n} sel", "chart.title": "Loss: kode Anda dibandingkan dengan baseline FP32",
        "chart.yours": "kode Anda", "chart.baseline": "baseline FP32", "chart.step": "step",
        "notebook.grading": "Menilai {lesson}: {stage}",
        "notebook.next_cell": "Sel berikutnya berisi kode awal di bawah `%%grade {lesson}`: lengkapi lalu jalankan.",
        "task": "Tugas", "write": "Tulis",
    },
}


def say(key: str, lang: str = "en", **params) -> str:
    """One of the report's own phrases; `{param}` placeholders as in the message catalog."""
    template = WORDS.get(lang, WORDS["en"]).get(key) or WORDS["en"][key]
    return template.format(**params)


def verdict(status: str, lang: str = "en") -> str:
    return say(f"verdict.{status}", lang)


def error_heading(kind: str, lang: str = "en") -> str:
    """What a failed run's error kind means, as the web app heads it."""
    key = f"error.{kind}"
    return say(key, lang) if key in WORDS["en"] else say("error.other", lang, kind=kind)


def stage_in_words(stage: str, info: dict, lang: str = "en") -> str:
    """A progress event of runner.run(), as a learner follows it."""
    if stage == "steps":
        if info.get("done") is not None:
            return say("stage.step", lang, done=info["done"], total=info.get("total", "?"))
        return say("stage.steps", lang, total=info.get("total", "?"))
    if stage == "timing":
        if not info.get("rounds"):
            return say("stage.timing", lang)
        text = say("stage.timing_round", lang, n=info["rounds"])
        speed = info.get("speedup")
        return text + (", " + say("stage.so_far", lang, x=f"{speed:.2f}") if isinstance(speed, float) else "")
    if stage == "check":
        return say("stage.check", lang, check=info.get("check", "?"), verdict=verdict(info.get("status", "error"),
                                                                                        lang))
    key = f"stage.{stage}"
    return say(key, lang) if key in WORDS["en"] else stage


def counts_in_words(result: GradingResult, lang: str = "en") -> str:
    """"2 passed, 1 failed, 1 not applicable", in the order a learner acts on them."""
    order = (FAIL, ERROR, PASS, NOT_APPLICABLE)
    counts = {s: sum(c.status == s for c in result.checks) for s in order}
    return ", ".join(say(f"count.{s}", lang, n=counts[s]) for s in order if counts[s])


def summary_in_words(result: GradingResult, lang: str = "en") -> str:
    """The closing line: the verdict, what the checks said, the score and the time."""
    parts = [say(f"summary.{result.status}", lang)]
    if counts := counts_in_words(result, lang):
        parts.append(counts)
    parts += [say("score", lang, n=round(result.score * 100)), f"{result.duration_s:.1f} s"]
    return " · ".join(parts)


def error_in_words(error: SubmissionError) -> str:
    """The error's message without the "line N: " the runner puts before it (the report shows the line
    itself, as file:line or as a line of the cell)."""
    prefix = f"line {error.line}: "
    return error.message[len(prefix):] if error.line and error.message.startswith(prefix) else error.message
