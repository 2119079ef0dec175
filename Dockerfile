# mysql-rollback service: SQLite job store in the /data volume, Spark local[*].
#   docker build -t mysql-rollback .
#   docker run -p 8080:8080 -v rollback-data:/data -e MYSQL_ROLLBACK_SERVERS='{"prod1": "mysql://flashback@db1:3306/"}' \
#       -e MYSQL_ROLLBACK_PASSWORD_PROD1=... mysql-rollback
# The package is built into a wheel in a stage of its own: the compiled core (rollback/_speedups.pyx,
# Cython) needs a C compiler, which the image that runs the service does not carry.
FROM python:3.11-slim AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY rollback ./rollback
COPY app ./app
COPY migrations ./migrations
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
    && python -c "import zipfile, glob; names = zipfile.ZipFile(glob.glob('/wheels/*.whl')[0]).namelist(); assert any(n.startswith('rollback/_speedups') and n.endswith('.so') for n in names), 'the compiled core is not in the wheel'"

FROM python:3.11-slim

# Spark needs a Java runtime; nothing else from the system. Debian's package versions move with
# the base image's point releases, so they are not pinned here.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends default-jre-headless \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/mysql-rollback
# The wheel carries the migrations (app/_migrations): the service finds them with no setting.
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir /tmp/wheels/*.whl && rm -rf /tmp/wheels \
    && python -c "import sys, rollback; sys.exit(rollback.hot_path() != 'compiled')"

RUN useradd --create-home --uid 10001 rollback \
    && mkdir -p /data && chown 10001 /data
USER 10001

# The job database, scripts and spool live in /data; migrations are applied at start-up.
ENV MYSQL_ROLLBACK_DATA_DIR=/data \
    MYSQL_ROLLBACK_SPARK_MASTER=local[*] \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=4)"]
CMD ["mysql-rollback", "serve", "--host", "0.0.0.0", "--port", "8080"]
