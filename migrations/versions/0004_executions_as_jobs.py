"""executions run in the worker pool: progress, cancellation, start time; jobs record when they were applied
and the disk their output takes

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("executions") as batch:
        batch.add_column(sa.Column("started_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("phase", sa.String(length=8), nullable=True))
        batch.add_column(sa.Column("progress_done", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("progress_total", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("current_transaction", sa.Text(), nullable=True))
        batch.add_column(sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.create_index("ix_executions_state", ["state"])
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("applied_execution", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("applied_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("applied_by", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("disk_bytes", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        for column in ("disk_bytes", "applied_by", "applied_at", "applied_execution"):
            batch.drop_column(column)
    with op.batch_alter_table("executions") as batch:
        batch.drop_index("ix_executions_state")
        for column in ("cancel_requested", "progress_total", "progress_done", "phase", "started_at"):
            batch.drop_column(column)
        batch.drop_column("current_transaction")
