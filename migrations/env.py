"""Alembic environment: the URL comes from the caller's config, never from a global."""

from alembic import context
from sqlalchemy import create_engine

from service.db.models import Base

config = context.config
url = config.get_main_option("sqlalchemy.url")
if not url:
    raise RuntimeError("alembic: sqlalchemy.url is not set (use service.db.migrate)")

if context.is_offline_mode():
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    connectable = config.attributes.get("connection")
    if connectable is None:
        engine = create_engine(url)
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=Base.metadata,
                render_as_batch=url.startswith("sqlite"),
            )
            with context.begin_transaction():
                context.run_migrations()
        engine.dispose()
    else:
        context.configure(connection=connectable, target_metadata=Base.metadata)
        with context.begin_transaction():
            context.run_migrations()
