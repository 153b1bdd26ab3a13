-- The web app's own records. Grading workers never read this file's database:
-- they share only the queue's storage, and the collector copies what they
-- write there into these tables.

CREATE TABLE IF NOT EXISTS submissions (
    id TEXT PRIMARY KEY,                -- random, so ids cannot be enumerated
    learner TEXT NOT NULL,              -- anonymous id from the signed session
    client_ip TEXT,
    lesson TEXT NOT NULL,
    code TEXT NOT NULL,
    lang TEXT NOT NULL DEFAULT 'en',
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'error')),
    attempt INTEGER NOT NULL DEFAULT 1,
    created_at REAL NOT NULL,
    queued_at REAL NOT NULL,            -- last (re-)queueing, for the queue position
    enqueued_at REAL,                   -- when the task reached the queue; NULL = not yet
    started_at REAL,
    finished_at REAL,
    hb_value TEXT,                      -- last heartbeat seen for the current attempt
    hb_seen_at REAL,                    -- when this app saw it change (its own clock)
    result TEXT,                        -- the grader's result document (JSON)
    result_status TEXT,                 -- pass / fail / error of that document
    score REAL,
    graded_by TEXT,                     -- worker that wrote the accepted result
    error TEXT                          -- why there is no result (platform problem)
);

CREATE INDEX IF NOT EXISTS submissions_learner ON submissions (learner, lesson, created_at);
CREATE INDEX IF NOT EXISTS submissions_active ON submissions (status, queued_at);
CREATE INDEX IF NOT EXISTS submissions_ip ON submissions (client_ip, created_at);

-- Progress of each submission, in the order the SSE stream sends it. The id is
-- the SSE event id; (submission, attempt, source) makes ingestion idempotent.
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    submission_id TEXT NOT NULL REFERENCES submissions (id),
    attempt INTEGER NOT NULL,
    source TEXT NOT NULL,               -- 'w:<n>' from the worker, or 'queued', 'retry', 'done'
    type TEXT NOT NULL,                 -- queued / progress / check / done
    data TEXT NOT NULL,                 -- JSON
    created_at REAL NOT NULL,
    UNIQUE (submission_id, attempt, source)
);

CREATE INDEX IF NOT EXISTS events_submission ON events (submission_id, id);
