"""web_sessions: server-side browser sessions (the cookie holds a signed random id, not the token)

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
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_web_sessions_token_hash"), "web_sessions", ["token_hash"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_web_sessions_token_hash"), table_name="web_sessions")
    op.drop_table("web_sessions")
