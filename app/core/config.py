"""Settings of the service, from the environment (MYSQL_ROLLBACK_*) or a TOML config file.

Precedence: environment, then the file named by MYSQL_ROLLBACK_CONFIG, then the defaults.
Servers are configured by name; a password comes from the DSN or from
MYSQL_ROLLBACK_PASSWORD_<NAME> and lives only in memory (never in the job database, a log line
or a response).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from rollback import (
    AUTO_SPARK_BYTES,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_ENGINE,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    ConnectionOptions,
    DsnError,
    EngineKind,
    build_dsn,
    host_port,
    parse_dsn,
    parse_size,
)

ROLES = ("viewer", "operator", "admin")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the setting and never holds a password."""


@dataclass(frozen=True)
class ServerConfig:
    """One configured server. The password is kept out of repr() and out of every dict it renders."""

    name: str
    host: str
    port: int = 3306
    user: str = ""
    password: str = field(default="", repr=False)
    binlog_dir: Path | None = None  # binlog files readable on this machine (else the live source)
    connection: ConnectionOptions = ConnectionOptions()  # its DSN's socket and TLS options

    @property
    def options(self) -> str:
        """The DSN's connection options as its query (`?socket=...&ssl-mode=...`), or ""."""
        return self.connection.query

    @property
    def dsn(self) -> str:
        """The DSN with the password: for the engine only, never for output."""
        return build_dsn(self.host, self.port, self.user, self.password or None, query=self.options)

    @property
    def public_dsn(self) -> str:
        return build_dsn(self.host, self.port, self.user, None, query=self.options)

    @property
    def where(self) -> str:
        """Where its sessions go, for people (no path on the service host): `db1:3306`, or `Unix socket`."""
        return "Unix socket" if self.connection.socket else host_port(self.host, self.port)

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "options": self.connection.summary,
            "binlog_dir": str(self.binlog_dir) if self.binlog_dir else None,
        }


@dataclass(frozen=True)
class ApiToken:
    name: str
    role: str
    token: str = field(repr=False)


def password_env_name(server: str) -> str:
    return "MYSQL_ROLLBACK_PASSWORD_" + re.sub(r"[^A-Za-z0-9]", "_", server).upper()


def parse_server(name: str, value: Any, environ: dict[str, str] | None = None) -> ServerConfig:
    environ = os.environ if environ is None else environ  # type: ignore[assignment]
    if not _NAME.match(name):
        raise ConfigError(f"server name {name!r} must be letters, digits, '_', '.', '-' (at most 64)")
    binlog_dir = None
    if isinstance(value, dict):
        unknown = set(value) - {"dsn", "binlog_dir"}
        if unknown or "dsn" not in value:
            raise ConfigError(
                f"server {name}: give {{'dsn': ..., 'binlog_dir': ...}} (got keys {sorted(value)})"
            )
        binlog_dir = Path(value["binlog_dir"]) if value.get("binlog_dir") else None
        value = value["dsn"]
    if not isinstance(value, str):
        raise ConfigError(f"server {name}: the DSN must be a string like mysql://user@host:3306/")
    try:
        parts = parse_dsn(value)
        options = ConnectionOptions.of(parts)
    except DsnError as exc:
        raise ConfigError(f"server {name}: {exc}") from None
    if not parts.host and not options.socket:
        raise ConfigError(f"server {name}: the DSN must look like mysql://user:password@host:3306/")
    password = parts.password if parts.password is not None else ""
    password = environ.get(password_env_name(name), password)  # type: ignore[union-attr]
    return ServerConfig(name, options.host(parts.host), parts.port, parts.user, password, binlog_dir, options)


def parse_tokens(text: str) -> list[ApiToken]:
    tokens = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        name, sep, rest = item.partition(":")
        role, sep2, token = rest.partition(":")
        if not (sep and sep2 and name and token):
            raise ConfigError("MYSQL_ROLLBACK_API_TOKENS takes comma-separated name:role:token")
        if role not in ROLES:
            raise ConfigError(f"API token {name}: role must be one of {', '.join(ROLES)} (got {role!r})")
        if len(token) < 16:
            raise ConfigError(f"API token {name}: the token must have at least 16 characters")
        tokens.append(ApiToken(name, role, token))
    return tokens


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MYSQL_ROLLBACK_", env_file=None, extra="ignore")

    data_dir: Path = Path("./data")
    db_url: str | None = None
    servers: Any = "{}"  # JSON object: name -> DSN, or name -> {dsn, binlog_dir}
    api_tokens: str = ""  # name:role:token,...
    spark_master: str = "local[*]"
    engine: str = DEFAULT_ENGINE.value  # auto | spark | local (see rollback.request.spec.EngineKind)
    auto_spark_bytes: int = AUTO_SPARK_BYTES  # auto: ranges of at least this many bytes run on Spark
    # auto, once the service's Spark is warm (no JVM start to pay): the same threshold, lower.
    # Measured on 2 cores (bench/README.md): a 226 MB range runs faster on warm Spark, a 45 MB one
    # about as fast in-process (sooner under load).
    auto_spark_bytes_warm: int = 128 << 20
    partition_bytes: int | None = None  # target partition size; None: sized from the range and Spark's cores
    # Every Spark node reads it: with a cluster master, binlogs (uploads, spooled copies) are staged here
    work_dir: str | None = None
    spark_cores_max: int | None = None  # spark.cores.max on a cluster: cores left for other applications
    workers: int = 2  # jobs running at once
    execution_workers: int = 4  # executions running at once (one per target)
    retention_days: int = 30  # jobs (and their files) kept this long after they end; applied jobs are kept
    max_upload_bytes: int = 1 << 30
    auth_failures_per_minute: int = 20  # per client address; 0 turns throttling off
    session_hours: float = 12.0  # a web sign-in lasts this long
    session_secret: SecretStr | None = None  # signs the session cookie; generated into the data dir if unset
    https: bool = False  # served over https (directly or behind a proxy): cookies get Secure
    spark_secret: SecretStr | None = None  # spark.authenticate.secret with a cluster master
    warm_spark: bool = (
        True  # start Spark and its Python workers with the service (unless the engine is local)
    )
    spark_niceness: int = 10  # the service's Spark JVM and Python workers run at this nice value
    access_log: bool = True  # uvicorn's line per HTTP request
    # Every session to a server (sources, schema reads, time zones, targets): seconds to connect, and
    # to wait for an answer or for the socket to take a write before the server is taken as gone.
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    write_timeout: float = DEFAULT_WRITE_TIMEOUT
    uploads_per_client: int = 2  # uploads one client address sends at once
    # Slow clients (app/core/http_protocol.py): seconds to send a request's headers, seconds of
    # silence inside a request's body; and the connections and requests served at once.
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000

    @field_validator(
        "auto_spark_bytes", "auto_spark_bytes_warm", "partition_bytes", "max_upload_bytes", mode="before"
    )
    @classmethod
    def _sizes(cls, value: Any) -> int | None:
        # 268435456, 256M, 1G: the CLI's sizes (MYSQL_ROLLBACK_AUTO_SPARK_BYTES, --partition-size) read alike.
        return None if value is None else parse_size(value)

    @field_validator("uploads_per_client", "max_connections")
    @classmethod
    def _counts(cls, value: int, info: ValidationInfo) -> int:
        if value < 1:
            raise ValueError(f"MYSQL_ROLLBACK_{str(info.field_name).upper()} must be 1 or more")
        return value

    @field_validator("connect_timeout", "read_timeout", "write_timeout", "header_timeout", "body_timeout")
    @classmethod
    def _timeouts(cls, value: float, info: ValidationInfo) -> float:
        if not 0 < value <= 31_536_000:
            raise ValueError(
                f"MYSQL_ROLLBACK_{str(info.field_name).upper()} must be a number of seconds above 0"
            )
        return value

    @field_validator("auth_failures_per_minute")
    @classmethod
    def _auth_failures(cls, value: int) -> int:
        if value < 0:
            raise ValueError("MYSQL_ROLLBACK_AUTH_FAILURES_PER_MINUTE must be 0 (off) or more")
        return value

    @field_validator("session_hours")
    @classmethod
    def _session_hours(cls, value: float) -> float:
        if not 0 < value <= 24 * 30:
            raise ValueError("MYSQL_ROLLBACK_SESSION_HOURS must be more than 0 and at most 720")
        return value

    @field_validator("session_secret")
    @classmethod
    def _session_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError("MYSQL_ROLLBACK_SESSION_SECRET must have at least 32 characters")
        return value

    @field_validator("workers")
    @classmethod
    def _workers(cls, value: int) -> int:
        if not 1 <= value <= 64:
            raise ValueError("MYSQL_ROLLBACK_WORKERS must be between 1 and 64")
        return value

    @field_validator("execution_workers")
    @classmethod
    def _execution_workers(cls, value: int) -> int:
        if not 1 <= value <= 64:
            raise ValueError("MYSQL_ROLLBACK_EXECUTION_WORKERS must be between 1 and 64")
        return value

    @field_validator("spark_niceness")
    @classmethod
    def _spark_niceness(cls, value: int) -> int:
        if not 0 <= value <= 19:
            raise ValueError("MYSQL_ROLLBACK_SPARK_NICENESS must be between 0 and 19")
        return value

    @field_validator("retention_days")
    @classmethod
    def _retention_days(cls, value: int) -> int:
        if not 0 <= value <= 36500:
            raise ValueError("MYSQL_ROLLBACK_RETENTION_DAYS must be between 0 (keep forever) and 36500")
        return value

    @field_validator("engine")
    @classmethod
    def _engine(cls, value: str) -> str:
        if value not in {kind.value for kind in EngineKind}:
            raise ValueError("MYSQL_ROLLBACK_ENGINE must be auto, local or spark")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get("MYSQL_ROLLBACK_CONFIG")
        if config_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config_file))
        return tuple(sources)

    @property
    def database_url(self) -> str:
        return self.db_url or f"sqlite:///{(self.data_dir / 'jobs.sqlite3').resolve()}"

    def server_configs(self) -> dict[str, ServerConfig]:
        raw = self.servers
        if isinstance(raw, str):
            try:
                raw = json.loads(raw or "{}")
            except json.JSONDecodeError as exc:
                raise ConfigError(f"MYSQL_ROLLBACK_SERVERS is not valid JSON ({exc.msg})") from None
        if not isinstance(raw, dict):
            raise ConfigError("MYSQL_ROLLBACK_SERVERS must be a JSON object: name -> DSN")
        return {name: parse_server(name, value) for name, value in raw.items()}

    def export_timeouts(self) -> None:
        """The engine reads the server timeouts from the environment (a TOML file's values too)."""
        for env, value in (
            ("MYSQL_ROLLBACK_CONNECT_TIMEOUT", self.connect_timeout),
            ("MYSQL_ROLLBACK_READ_TIMEOUT", self.read_timeout),
            ("MYSQL_ROLLBACK_WRITE_TIMEOUT", self.write_timeout),
        ):
            os.environ[env] = repr(float(value))

    def tokens(self) -> list[ApiToken]:
        return parse_tokens(self.api_tokens)

    @property
    def jobs_dir(self) -> Path:
        return self.data_dir / "jobs"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def spool_dir(self) -> Path:
        return self.data_dir / "spool"


def get_settings() -> Settings:
    return Settings()
