"""jobs, executions, uploads, generated API tokens

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("server", sa.String(length=64), nullable=True),
        sa.Column("upload_id", sa.String(length=32), nullable=True),
        sa.Column("range_requested", sa.Text(), nullable=False),
        sa.Column("range_resolved", sa.Text(), nullable=True),
        sa.Column("filters", sa.Text(), nullable=False),
        sa.Column("options", sa.Text(), nullable=False),
        sa.Column("progress_bytes", sa.BigInteger(), nullable=False),
        sa.Column("progress_total", sa.BigInteger(), nullable=False),
        sa.Column("progress_events", sa.BigInteger(), nullable=False),
        sa.Column("progress_events_total", sa.BigInteger(), nullable=False),
        sa.Column("rows_emitted", sa.BigInteger(), nullable=False),
        sa.Column("transactions", sa.Integer(), nullable=False),
        sa.Column("statements", sa.Integer(), nullable=False),
        sa.Column("counts", sa.Text(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("warnings", sa.Text(), nullable=True),
        sa.Column("irreversible", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("script_path", sa.String(length=1024), nullable=True),
        sa.Column("plan_path", sa.String(length=1024), nullable=True),
        sa.Column("changes_path", sa.String(length=1024), nullable=True),
        sa.Column("script_bytes", sa.BigInteger(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_jobs_created_at", "jobs", ["created_at"], unique=False)
    op.create_index("ix_jobs_state", "jobs", ["state"], unique=False)
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("created_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("files", sa.Text(), nullable=False),
        sa.Column("total_bytes", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "executions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("on_conflict", sa.String(length=8), nullable=False),
        sa.Column("requested_by", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("committed", sa.Boolean(), nullable=False),
        sa.Column("statements", sa.Integer(), nullable=False),
        sa.Column("rows_affected", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("conflicts", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_executions_job_id", "executions", ["job_id"], unique=False)


def downgrade() -> None:
    # Indexes go with their tables (MySQL refuses to drop an index a foreign key needs).
    op.drop_table("executions")
    op.drop_table("uploads")
    op.drop_table("jobs")
    op.drop_table("api_tokens")
