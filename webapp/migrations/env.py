"""Alembic's environment for the web app's database. The app runs migrations
itself (webapp.db.init_db) on a connection it already holds, inside its own
write-locked transaction, so this only hands that connection to Alembic."""

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the migrations through `amp-dojo init-db` (webapp.db.init_db), which holds the lock")
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
