"""leases: money and tokens reserved from a run's budget for each job in flight

Revision ID: 0003
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("step_id", sa.String(length=32), nullable=True),
        sa.Column("evaluation_id", sa.String(length=32), nullable=True),
        sa.Column("usd_reserved", sa.Float(), nullable=True),
        sa.Column("tokens_reserved", sa.Integer(), nullable=True),
        sa.Column("usd_spent", sa.Float(), nullable=True),
        sa.Column("tokens_spent", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("leases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_leases_step_id"), ["step_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_leases_evaluation_id"), ["evaluation_id"], unique=False)
        batch_op.create_index("ix_leases_run_settled", ["run_id", "settled_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("leases", schema=None) as batch_op:
        batch_op.drop_index("ix_leases_run_settled")
        batch_op.drop_index(batch_op.f("ix_leases_evaluation_id"))
        batch_op.drop_index(batch_op.f("ix_leases_step_id"))
    op.drop_table("leases")
