"""A throwaway PostgreSQL server for the tests and the load benchmark: Debian's
`postgresql` package, a cluster made with initdb in a temporary folder, listening
on a free loopback port and a unix socket in that folder, and removed at the end.

PostgreSQL refuses to run as root, so as root the server runs as the `postgres`
user (`runuser -u postgres --`); as anyone else, as that user. Durability is
switched off (fsync, synchronous_commit, full_page_writes): a test cluster never
outlives its tests.

    with PostgresServer() as server:
        url = server.create_database()      # postgresql://postgres@127.0.0.1:PORT/amp_dojo_test_1"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REQUIRE = bool(os.environ.get("AMP_DOJO_REQUIRE_POSTGRES"))
_names = itertools.count(1)


class NoPostgres(RuntimeError):
    pass


def bindir() -> Path | None:
    """Where initdb and pg_ctl are: Debian keeps them under /usr/lib/postgresql/<major>/bin."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    def __init__(self):
        self.bin = bindir()
        if self.bin is None:
            raise NoPostgres("PostgreSQL's initdb is not installed (Debian: apt-get install postgresql)")
        self.port = free_port()
        self.dir: Path | None = None
        self.as_user: list[str] = []
        self.user = "postgres"

    def _run(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([*self.as_user, *args], check=True, capture_output=True, text=True, **kwargs)

    def start(self, timeout: float = 60.0) -> PostgresServer:
        self.dir = Path(tempfile.mkdtemp(prefix="amp-dojo-pg-"))
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")  # created by Debian's package
            os.chown(self.dir, account.pw_uid, account.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        data = self.dir / "data"
        try:
            self._run(
                str(self.bin / "initdb"),
                "-D",
                str(data),
                "-U",
                self.user,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            )
            options = (
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
            )
            self._run(
                str(self.bin / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(self.dir / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                str(int(timeout)),
                "start",
            )
        except subprocess.CalledProcessError as exc:
            log = (self.dir / "server.log").read_text() if (self.dir / "server.log").exists() else ""
            self.stop()
            raise NoPostgres(f"PostgreSQL did not start: {exc.stderr or exc.stdout}\n{log[-2000:]}") from None
        return self

    def url(self, name: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{name}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(sql)

    def create_database(self, name: str | None = None) -> str:
        name = name or f"amp_dojo_test_{os.getpid()}_{next(_names)}"
        self._admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')

    def stop(self) -> None:
        if self.dir is None:
            return
        data = self.dir / "data"
        if (data / "postmaster.pid").exists():
            try:
                self._run(str(self.bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
            except subprocess.CalledProcessError:
                pass
        for _ in range(20):  # the server's files go once it has exited
            try:
                shutil.rmtree(self.dir)
                break
            except OSError:
                time.sleep(0.1)
        self.dir = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()
