"""Default settings. Every key is documented in docs/configuration.md; a deployment
overrides them with a Python file named by AMP_DOJO_CONFIG or with AMP_DOJO_<KEY>
environment variables (values parsed as JSON where they can be, so
AMP_DOJO_RATE_LIMIT=10 is an int)."""

# Where the web app keeps accounts, courses, submissions and events: a SQLite file path, or a
# postgresql://user:password@host:port/name URL for app processes on several machines;
# None = <instance>/amp_dojo.sqlite3.
DATABASE = None
# The grading queue: sqlite:///<path> (single machine) or redis://host:port/db
# (workers on other machines). None = sqlite:///<instance>/queue.sqlite3.
QUEUE_URL = None
# Lesson YAML folder; None = AMP_DOJO_EXERCISES or the repository's exercises/.
EXERCISES = None

# How grading workers isolate learner code: auto, docker, bwrap or local.
SANDBOX = "auto"
# Local means a plain child process: only for a learner grading their own code.
ALLOW_LOCAL_SANDBOX = False
# Sandbox limits a grading worker applies, replacing grader.sandboxes.limits.Limits defaults by name, e.g.
# {"memory_bytes": 8e9, "step_timeout_s": 120} (names and defaults: docs/security.md).
SANDBOX_LIMITS = {}
# auto, cpu, cuda or cuda:N, passed to the grader.
DEVICE = "auto"
# Gradings one `amp-dojo worker` runs at once; None = one per CPU core on a CPU, 2 on a GPU. Timed speedup
# rounds (and CUDA memory peaks) still have the device to themselves (grader/sandboxes/exclusive.py).
GRADING_CONCURRENCY = None
# Warm sandboxes a worker keeps started (PyTorch imported, no code yet), each used for one submission only;
# None = as many as GRADING_CONCURRENCY, 0 = start a sandbox per submission.
POOL_SIZE = None
# Where a worker keeps the trusted runs (FP32 baseline, reference): "queue" = the queue's own storage (the
# SQLite file in the instance folder, or Redis, shared by every worker), a folder path, or "" (memory only).
TRUSTED_RUNS = "queue"
# Compute the trusted runs of every lesson when a worker starts, so no learner waits for one.
WARM_AT_START = True

# Largest accepted submission, in bytes of UTF-8 (larger: 413).
MAX_CODE_BYTES = 65536
# Submissions per learner: a burst of RATE_BURST at once, then RATE_LIMIT a minute (a token bucket; a run the
# learner cancels gives its token back). Past it: 429 with Retry-After. Sized for verdicts that take a second.
RATE_BURST = 10
RATE_LIMIT = 12
# Submissions per client address per minute: only a high abuse ceiling, for clients that shed their cookie. A class
# behind one NAT address shares it (30 learners at RATE_LIMIT would send 360): raise it there, or 0 for none.
IP_RATE_LIMIT = 300
# Submissions waiting in the queue, all learners together (more: 429).
QUEUE_MAX = 200
# Submissions one learner may have waiting or being graded at once (more: 429). Whatever this is, the grading
# queue holds at most one of each learner's at a time (webapp/dispatch.py): the others wait for their turn.
MAX_WAITING_PER_LEARNER = 2
# The same per client address: a high ceiling against clients that shed their cookie (a class behind one NAT
# address shares it: 30 learners with 2 each is 60). 0: none.
MAX_WAITING_PER_IP = 80
# Bytes of code (UTF-8) stored in any 24 hours, per learner and per client address (past either: 429 naming the
# limit, with Retry-After). A cancelled run counts by the size it came with, though its code is dropped at once.
# A learner at MAX_CODE_BYTES could send 120 a day; a typical lesson's solution of 2-5 kB, well over a thousand.
# A class of 60 behind one NAT address shares the second: 2 MB each a day (or raise it). 0: none.
CODE_BYTES_PER_LEARNER_DAY = 8000000
CODE_BYTES_PER_IP_DAY = 120000000

# Submissions from one client address waiting in the grading queue at once (handed over, no worker on them
# yet; those being graded do not count): learners elsewhere wait behind at most this many of one address's,
# however many accounts it made. The learners behind one address (a class behind a NAT) take turns among
# themselves. 0: no such bound (learners are still served one submission each at a time).
QUEUE_TURNS_PER_IP = 4

# A running grading whose worker has not sent a heartbeat for this long is lost.
LEASE_SECONDS = 30

# Every `amp-dojo worker` records a heartbeat (host, pid, device, sandbox, what it grades now) in the queue's storage
# (QUEUE_URL, which is all a worker on another machine needs) every WORKER_HEARTBEAT_SECONDS.
# One silent for WORKER_DEAD_AFTER_SECONDS counts as dead: /readyz is 503 without a live one, and a learner whose
# submission waits is told that no grader is running (it is graded once one starts).
WORKER_HEARTBEAT_SECONDS = 5
WORKER_DEAD_AFTER_SECONDS = 15
# Who may read the Prometheus metrics at /metrics (others get a 404): "loopback" (a client on this machine talking
# to the app directly; a request relayed by a proxy is not one), "any", or "none". METRICS_TOKEN, if set, also
# lets in any client sending "Authorization: Bearer <token>".
METRICS_ALLOW = "loopback"
METRICS_TOKEN = None
# Attempts at grading one submission before it is marked as an error.
MAX_ATTEMPTS = 2

# Largest result document stored per submission, in bytes of JSON: a bigger one is kept cut (long strings
# shortened with "[truncated: N bytes]", plots thinned or dropped, `truncated` set), its verdict intact.
MAX_RESULT_BYTES = 262144
# Largest progress event stored, in bytes of JSON, and events stored per grading attempt (the rest dropped).
MAX_EVENT_BYTES = 8192
MAX_EVENTS_PER_ATTEMPT = 200

# Seconds between background collections of worker results (0: only on requests).
COLLECT_INTERVAL = 1.0
# Longest an SSE stream stays open, in seconds (the browser reconnects after).
STREAM_SECONDS = 600
# Open SSE streams, all learners together, and per learner, counted in the database across every app
# process that shares it: each holds a server thread (keep MAX_STREAMS well under `amp-dojo serve
# --threads`, 16 by default, times the processes). Past either cap the stream gets 429 and the page polls.
MAX_STREAMS = 8
MAX_STREAMS_PER_LEARNER = 2
# Open SSE streams per client address (0: no cap), so that one client minting anonymous cookies cannot hold
# them all. A class behind one NAT address shares it: the others poll (or raise it, with TRUSTED_PROXIES set).
MAX_STREAMS_PER_IP = 2
# A stream whose submission brings no new event (nor a new queue position) for this long ends; the page
# then polls. Longer than LEASE_SECONDS, so a grading that stopped is first noticed by its lease.
STREAM_IDLE_SECONDS = 60

# `amp-dojo serve` (waitress): connections open at once, all clients together (each costs a file
# descriptor, not a thread); seconds a connection may stay without a complete request before it is closed
# (a slow sender is never idle: a reverse proxy keeps it away from the app, docs/security.md#reverse-proxy);
# the largest request header. The largest body is MAX_CONTENT_LENGTH.
SERVER_CONNECTION_LIMIT = 1000
SERVER_CHANNEL_TIMEOUT = 30
SERVER_MAX_HEADER_BYTES = 32768

# What the processes log on stderr: LOG_LEVEL DEBUG, INFO, WARNING or ERROR (WARNING: a start says only the URL and
# real warnings; INFO adds Alembic's migrations, the queue's consumer and one line per request and grading;
# `--verbose` is DEBUG). LOG_FORMAT "text", or "json": one JSON object per line with, where known, request_id
# (echoed in the X-Request-Id response header), learner, submission_id, lesson, attempt and duration_ms.
LOG_LEVEL = "WARNING"
LOG_FORMAT = "text"

# Signs the session cookie; None = generated once into <instance>/secret_key.
SECRET_KEY = None
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_HTTPONLY = True
# Always mark the session cookie Secure (it is anyway on requests that came over HTTPS).
SESSION_COOKIE_SECURE = False
# Reverse proxies in front of the app whose X-Forwarded-For/-Proto/-Host headers are trusted (0: none).
# Behind one nginx: 1, so client addresses (rate limits) and HTTPS (Secure cookies) are the client's.
TRUSTED_PROXIES = 0

# Whether visitors without an account may use lessons (instructors can change it on the settings page;
# what they set there wins over this default).
ANONYMOUS_USE = True
# Failed sign-ins allowed per window, per username from one address: past it, 429 with Retry-After for that
# username from that address only. Once an address has LOGIN_FAILURES_PER_IP failures (all usernames together:
# spraying) or a username LOGIN_FAILURES_PER_NAME (all addresses together: a guesser with many addresses), each
# (username, address) gets one try in the window instead: a right password from an address that has not
# guessed at that name still signs in, so wrong guesses at made-up or other names never lock an account out.
LOGIN_WINDOW_S = 900
LOGIN_FAILURES_PER_ACCOUNT = 5
LOGIN_FAILURES_PER_IP = 100
LOGIN_FAILURES_PER_NAME = 50
# Wrong course join codes per account in JOIN_WINDOW_S seconds (a right code is not counted); past it: 429
# with Retry-After. Once an address has JOIN_FAILURES_PER_IP wrong codes (all accounts together), each account
# there gets one try in the window instead: classmates who typed no wrong code still join. With 32^8 codes,
# guessing at (JOIN_FAILURES_PER_IP + SIGNUPS_PER_IP) an hour per address finds none.
JOIN_WINDOW_S = 3600
JOIN_FAILURES_PER_ACCOUNT = 10
JOIN_FAILURES_PER_IP = 60
# New accounts per client address per hour (a class behind one NAT address signs up together: raise it).
SIGNUPS_PER_IP = 60

# Password resets (webapp/passwords.py). The site's address as learners reach it (https://dojo.example.edu, with
# any path prefix), for the links `amp-dojo reset-password` prints and "forgot password" mails; None = links
# on the address a request came to (the CLI then prints a path), and no mail is sent.
PUBLIC_URL = None
# Seconds a reset link works (it also dies once used, or when the password changes some other way).
PASSWORD_RESET_MAX_AGE_S = 86400
# "Forgot password" requests per typed username and per client address in RESET_MAIL_WINDOW_S seconds
# (past either: 429 with Retry-After; the links already sent stay good).
RESET_MAIL_WINDOW_S = 3600
RESET_MAILS_PER_NAME = 3
RESET_MAILS_PER_IP = 30
# The SMTP server "forgot password" mails reset links through (to the address an account holder set on their
# account page); None = no mail: the page says to ask the instructor. STARTTLS before the login where
# SMTP_STARTTLS; SMTP_USER/SMTP_PASSWORD only where the server wants a login. Mail needs PUBLIC_URL too.
SMTP_HOST = None
SMTP_PORT = 587
SMTP_STARTTLS = True
SMTP_USER = None
SMTP_PASSWORD = None
# The sender; None = amp-dojo@SMTP_HOST.
SMTP_FROM = None
SMTP_TIMEOUT = 10

# The tutor (docs/tutor.md): a self-hosted model that learners ask "why?" about a verdict, answering from the
# grader's findings and never with the solution. TUTOR_BASE_URL is an OpenAI-compatible endpoint's root, with its
# /v1 (vLLM: http://host:8000/v1, llama-server: http://host:8080/v1, Ollama: http://host:11434/v1); None = no
# tutor anywhere (no button, and the ask route answers 404): nothing leaves the server unless an admin sets it.
# TUTOR_API_KEY is always sent as a bearer key (servers started without a key ignore it); TUTOR_MODEL names the
# model as that server knows it.
TUTOR_BASE_URL = None
TUTOR_MODEL = "default"
TUTOR_API_KEY = "none"
# Seconds to connect; to wait for each piece of the answer (the first one included); for the whole answer.
TUTOR_CONNECT_TIMEOUT_S = 5
TUTOR_READ_TIMEOUT_S = 30
TUTOR_ANSWER_TIMEOUT_S = 90
# Longest answer (the model's tokens), prompt (characters sent: the lesson, code, result and conversation are cut
# to fit) and question (characters).
TUTOR_MAX_TOKENS = 400
TUTOR_MAX_PROMPT_CHARS = 24000
TUTOR_MAX_QUESTION_CHARS = 600
# Questions per learner in any 24 hours, and per submission; answers the model writes at once (this process).
TUTOR_QUESTIONS_PER_DAY = 40
TUTOR_QUESTIONS_PER_SUBMISSION = 6
TUTOR_CONCURRENCY = 4
# Keep the text of questions and answers in the database (instructors never see it; only counts are shown).
# False: only who asked about which lesson and submission, and when (for the quotas and the counts).
TUTOR_STORE_QUESTIONS = False
