"""Default settings. Every key is documented in docs/configuration.md; a deployment
overrides them with a Python file named by AMP_DOJO_CONFIG or with AMP_DOJO_<KEY>
environment variables (values parsed as JSON where they can be, so
AMP_DOJO_RATE_LIMIT=10 is an int)."""

# Where the web app keeps submissions and events; None = <instance>/amp_dojo.sqlite3.
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
# Sandbox limits a grading worker applies, replacing grader.launcher.Limits defaults by name, e.g.
# {"memory_bytes": 8e9, "step_timeout_s": 120} (names and defaults: docs/security.md).
SANDBOX_LIMITS = {}
# auto, cpu, cuda or cuda:N, passed to the grader.
DEVICE = "auto"
# Gradings one `amp-dojo worker` runs at once; None = one per CPU core on a CPU, 2 on a GPU. Timed speedup
# rounds (and CUDA memory peaks) still have the device to themselves (grader/exclusive.py).
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
# Submissions per learner per minute (more: 429 with Retry-After).
RATE_LIMIT = 6
# Submissions per client address per minute, for clients that shed their cookie.
IP_RATE_LIMIT = 30
# Submissions waiting in the queue, all learners together (more: 429).
QUEUE_MAX = 50
# Submissions one learner, or one client address, may have waiting or being graded at once (more: 429).
# A class behind one NAT address shares the address cap: raise it (or 0 for none) there.
MAX_WAITING_PER_LEARNER = 2
MAX_WAITING_PER_IP = 25

# A running grading whose worker has not sent a heartbeat for this long is lost.
LEASE_SECONDS = 30
# Attempts at grading one submission before it is marked as an error.
MAX_ATTEMPTS = 2

# Seconds between background collections of worker results (0: only on requests).
COLLECT_INTERVAL = 1.0
# Longest an SSE stream stays open, in seconds (the browser reconnects after).
STREAM_SECONDS = 600
# Open SSE streams per app process, all learners together, and per learner: each holds a server
# thread (keep MAX_STREAMS well under `amp-dojo serve --threads`, 16 by default). Past either cap
# the stream gets 429 and the page polls instead.
MAX_STREAMS = 8
MAX_STREAMS_PER_LEARNER = 2

# Signs the session cookie; None = generated once into <instance>/secret_key.
SECRET_KEY = None
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_HTTPONLY = True
# Set to True behind HTTPS.
SESSION_COOKIE_SECURE = False
