"""jobs and executions: the exit code the CLI would have given (rollback.base.errors.EXIT_*)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("jobs", "executions"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("exit_code", sa.Integer(), nullable=True))


def downgrade() -> None:
    for table in ("executions", "jobs"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("exit_code")
