"""The command line as a client of the mysql-rollback service: `verify --job ID` reads the job's plan
from `GET /api/jobs/{id}/plan`. The token comes from $MYSQL_ROLLBACK_TOKEN or a file (--token-file),
which keep it out of `ps`; --token works too."""

from __future__ import annotations

import argparse
import json
import os
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from rollback import SourceError

if TYPE_CHECKING:
    import urllib.error

TOKEN_ENV = "MYSQL_ROLLBACK_TOKEN"
SERVICE_ENV = "MYSQL_ROLLBACK_SERVICE"
TIMEOUT = 300.0


def add_service_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--service",
        metavar="URL",
        help=f"with --job: the service, e.g. http://rollback:8080 (default ${SERVICE_ENV})",
    )
    parser.add_argument(
        "--token-file", metavar="FILE", help=f"with --job: read the API token from FILE (or set ${TOKEN_ENV})"
    )
    parser.add_argument(
        "--token", help=f"with --job: the API token (visible in ps: prefer ${TOKEN_ENV} or --token-file)"
    )


def service_token(args: argparse.Namespace) -> str:
    if args.token_file:
        try:
            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"--token-file {args.token_file}: cannot read it ({exc})") from None
    else:
        token = args.token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise SourceError(f"--job needs an API token: set ${TOKEN_ENV}, or give --token-file FILE")
    return token


def fetch_plan(args: argparse.Namespace, dest: Path) -> None:
    """Write job `args.job`'s plan to `dest`; SourceError with the service's own reason otherwise."""
    import urllib.error  # http.client and email: only when a plan is fetched
    import urllib.request

    service = (args.service or os.environ.get(SERVICE_ENV, "")).rstrip("/")
    if not service:
        raise SourceError(f"--job needs the service: --service URL (or ${SERVICE_ENV})")
    if urllib.parse.urlsplit(service).scheme not in ("http", "https"):
        raise SourceError(f"--service {service}: not an http(s) URL")
    url = f"{service}/api/jobs/{urllib.parse.quote(args.job, safe='')}/plan"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {service_token(args)}"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response, open(dest, "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
    except urllib.error.HTTPError as exc:
        raise SourceError(f"{service}: job {args.job}: {exc.code} {_detail(exc)}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SourceError(f"{service}: cannot read job {args.job}'s plan ({reason})") from None


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        detail = json.loads(exc.read().decode("utf-8", "replace")).get("detail")
    except (ValueError, AttributeError, OSError):
        detail = None
    return " ".join(str(detail or exc.reason).split())
