"""heldout-compared: how many agents a held-out phase compared (run_agents.heldout_compared)

The held-out interval of an agent named best among several is widened to hold for all of them
at once (contracts.intervals.simultaneous_z).

Revision ID: 0008_heldout_compared
Revises: 0007_models_transfer
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_heldout_compared"
down_revision: str | None = "0007_models_transfer"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Agents scored before this revision keep their plain 95% interval: null counts as 1.
    with op.batch_alter_table("run_agents") as batch:
        batch.add_column(sa.Column("heldout_compared", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run_agents") as batch:
        batch.drop_column("heldout_compared")
