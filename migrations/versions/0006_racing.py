"""racing: why an agent's measurement on a stage stopped (the `racing` evaluation policy)

Revision ID: 0006_racing
Revises: 0005
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_racing"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Null for every row written before, and for runs with the fixed stages: nothing was raced.
    with op.batch_alter_table("run_agents") as batch:
        batch.add_column(sa.Column("race_stop", sa.String(length=32), nullable=True))
    with op.batch_alter_table("stage_scores") as batch:
        batch.add_column(sa.Column("stop", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("stage_scores") as batch:
        batch.drop_column("stop")
    with op.batch_alter_table("run_agents") as batch:
        batch.drop_column("race_stop")
