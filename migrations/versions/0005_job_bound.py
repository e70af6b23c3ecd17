"""job-bound results: a secret per dispatched job, worker tokens, who submitted each answer

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ANSWERED = ("steps", "evaluations")
COLUMNS = ("job_secret_hash", "worker_token_id", "worker_name")


def upgrade() -> None:
    op.create_table(
        "worker_tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    # Jobs dispatched before this revision carry no secret: their rows have none, so their answers
    # are refused (409) and the driver sends them again, with one, once they are due.
    for table in ANSWERED:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("job_secret_hash", sa.String(length=64), nullable=True))
            batch.add_column(sa.Column("worker_token_id", sa.String(length=32), nullable=True))
            batch.add_column(sa.Column("worker_name", sa.String(length=200), nullable=True))


def downgrade() -> None:
    for table in ANSWERED:
        with op.batch_alter_table(table) as batch:
            for column in reversed(COLUMNS):
                batch.drop_column(column)
    op.drop_table("worker_tokens")
