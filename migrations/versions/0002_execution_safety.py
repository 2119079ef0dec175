"""executions: what the request accepted, the side effects the target reported, how the run went

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("executions") as batch:
        batch.add_column(sa.Column("accepted", sa.Text(), nullable=True))
        batch.add_column(sa.Column("side_effects", sa.Text(), nullable=True))
        batch.add_column(sa.Column("details", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("executions") as batch:
        batch.drop_column("details")
        batch.drop_column("side_effects")
        batch.drop_column("accepted")
