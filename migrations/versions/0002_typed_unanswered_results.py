"""evaluations no worker answered hold a typed result

Before 0002 the driver stored `{"failure": reason}` for an evaluation no worker answered, which is
not an EvaluationResult, so reading it through the API failed. Rewrite those rows into the shape
the driver writes now.

Revision ID: 0002
Revises: 0001
"""

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_evaluations = sa.table("evaluations", sa.column("id", sa.String), sa.column("result", sa.JSON))


def _typed(result: dict[str, Any]) -> dict[str, Any]:
    return {"schema_version": 1, "resolved": False, "infrastructure_failure": str(result["failure"])}


def upgrade() -> None:
    connection = op.get_bind()
    for row in connection.execute(sa.select(_evaluations.c.id, _evaluations.c.result)):
        result = json.loads(row.result) if isinstance(row.result, str) else row.result
        if isinstance(result, dict) and set(result) == {"failure"}:
            connection.execute(
                _evaluations.update().where(_evaluations.c.id == row.id).values(result=_typed(result))
            )


def downgrade() -> None:
    """Nothing to undo: the typed result is a valid record for every reader."""
