"""Settings of the service, from the environment (MYSQL_ROLLBACK_*) or a config file."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MYSQL_ROLLBACK_", env_file=None, extra="ignore")

    data_dir: Path = Path("./data")
    db_url: str | None = None
    spark_master: str = "local[*]"

    @property
    def database_url(self) -> str:
        return self.db_url or f"sqlite:///{(self.data_dir / 'jobs.sqlite3').resolve()}"


def get_settings() -> Settings:
    return Settings()
