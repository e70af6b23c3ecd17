"""models-transfer: each step's choice of improve model (models.improve_choice), and why

Revision ID: 0007_models_transfer
Revises: 0006_racing
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_models_transfer"
down_revision: str | None = "0006_racing"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Steps opened before this revision chose no model (they used `models.improve` as it was): null.
    with op.batch_alter_table("steps") as batch:
        batch.add_column(sa.Column("model_choice", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("steps") as batch:
        batch.drop_column("model_choice")
