"""search: crossover parents, epochs, trials, held-out scores, islands, niches, groups, reuse

Revision ID: 0004
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHA = sa.String(length=40)


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("epoch", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("second_parent_id", SHA, nullable=True))
        batch.add_column(sa.Column("meta_changed", sa.Boolean(), nullable=True))
        batch.create_foreign_key("fk_agents_second_parent", "agents", ["second_parent_id"], ["id"])
    with op.batch_alter_table("run_agents") as batch:
        batch.add_column(sa.Column("second_parent_id", SHA, nullable=True))
        batch.add_column(sa.Column("resolved", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("attempted", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("epoch", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("heldout_resolved", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("heldout_total", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("island", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("niche", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("group_id", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("same_as", SHA, nullable=True))
        batch.add_column(sa.Column("meta_changed", sa.Boolean(), nullable=True))
    with op.batch_alter_table("steps") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=16), nullable=False, server_default="improve"))
        batch.add_column(sa.Column("second_parent_id", SHA, nullable=True))
        batch.add_column(sa.Column("group_id", sa.String(length=64), nullable=True))
    with op.batch_alter_table("evaluations") as batch:
        batch.add_column(sa.Column("trial", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("epoch", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("purpose", sa.String(length=16), nullable=False, server_default="selection")
        )
        batch.add_column(sa.Column("reuse_key", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("reused_from", sa.String(length=32), nullable=True))
        batch.create_index("ix_evaluations_reuse_key", ["reuse_key"], unique=False)
        batch.drop_constraint("uq_evaluations_run_agent_task", type_="unique")
        batch.create_unique_constraint(
            "uq_evaluations_run_agent_task", ["run_id", "agent_id", "task_id", "epoch", "trial"]
        )
    # A stage score per utility version: the primary key gains the epoch.
    if op.get_bind().dialect.name == "postgresql":
        op.add_column("stage_scores", sa.Column("epoch", sa.Integer(), nullable=False, server_default="0"))
        op.drop_constraint("stage_scores_pkey", "stage_scores", type_="primary")
        op.create_primary_key("stage_scores_pkey", "stage_scores", ["run_id", "agent_id", "stage", "epoch"])
    else:  # SQLite cannot change a primary key in place; a batch copy would warn about it
        _rebuild_sqlite_stage_scores(["run_id", "agent_id", "stage", "epoch"], epoch=True)


def _rebuild_sqlite_stage_scores(key: list[str], *, epoch: bool) -> None:
    op.execute("ALTER TABLE stage_scores RENAME TO _stage_scores_before")
    columns = [
        sa.Column("run_id", sa.String(length=32), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("agent_id", SHA, sa.ForeignKey("agents.id"), nullable=False),
        sa.Column("stage", sa.Integer(), nullable=False),
        sa.Column("resolved", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
    ]
    if epoch:
        columns.append(sa.Column("epoch", sa.Integer(), nullable=False, server_default="0"))
    op.create_table("stage_scores", *columns, sa.PrimaryKeyConstraint(*key, name="stage_scores_pkey"))
    copied = "run_id, agent_id, stage, resolved, total, threshold, passed"
    where = "" if epoch else " WHERE epoch = 0"
    op.execute(f"INSERT INTO stage_scores ({copied}) SELECT {copied} FROM _stage_scores_before{where}")
    op.drop_table("_stage_scores_before")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("stage_scores_pkey", "stage_scores", type_="primary")
        op.execute("DELETE FROM stage_scores WHERE epoch <> 0")
        op.create_primary_key("stage_scores_pkey", "stage_scores", ["run_id", "agent_id", "stage"])
        with op.batch_alter_table("stage_scores") as batch:
            batch.drop_column("epoch")
    else:
        _rebuild_sqlite_stage_scores(["run_id", "agent_id", "stage"], epoch=False)
    op.execute("DELETE FROM evaluations WHERE epoch <> 0 OR trial <> 0")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_constraint("uq_evaluations_run_agent_task", type_="unique")
        batch.create_unique_constraint("uq_evaluations_run_agent_task", ["run_id", "agent_id", "task_id"])
        batch.drop_index("ix_evaluations_reuse_key")
        for column in ("reused_from", "reuse_key", "purpose", "epoch", "trial"):
            batch.drop_column(column)
    with op.batch_alter_table("steps") as batch:
        for column in ("group_id", "second_parent_id", "kind"):
            batch.drop_column(column)
    with op.batch_alter_table("run_agents") as batch:
        for column in (
            "meta_changed",
            "same_as",
            "group_id",
            "niche",
            "island",
            "heldout_total",
            "heldout_resolved",
            "epoch",
            "attempted",
            "resolved",
            "second_parent_id",
        ):
            batch.drop_column(column)
    with op.batch_alter_table("agents") as batch:
        batch.drop_constraint("fk_agents_second_parent", type_="foreignkey")
        batch.drop_column("meta_changed")
        batch.drop_column("second_parent_id")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("epoch")
