# mysql-rollback service: SQLite job store in a volume, Spark local[*].
FROM python:3.11-slim

# Spark needs a JRE; nothing else from the system.
RUN apt-get update \
    && apt-get install -y --no-install-recommends default-jre-headless curl \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/mysql-rollback
COPY pyproject.toml README.md alembic.ini ./
COPY rollback ./rollback
COPY app ./app
COPY migrations ./migrations
RUN pip install --no-cache-dir .

RUN useradd --create-home --uid 10001 rollback \
    && mkdir -p /data && chown rollback /data
USER rollback

ENV MYSQL_ROLLBACK_DATA_DIR=/data \
    MYSQL_ROLLBACK_SPARK_MASTER=local[*]
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/health || exit 1
CMD ["mysql-rollback", "serve", "--host", "0.0.0.0", "--port", "8080"]
