"""/docs (Swagger UI) and /redoc served from this process: the assets come from fastapi-offline's
bundle, so the pages work with no internet and under the CSP (no inline script)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs-assets"
router = APIRouter(include_in_schema=False)


def assets() -> StaticFiles:
    return StaticFiles(directory=Path(str(files("fastapi_offline") / "static")))


SWAGGER = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>mysql-rollback API</title>
  <link rel="icon" href="{ASSETS_URL}/favicon.png">
  <link rel="stylesheet" href="{ASSETS_URL}/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{ASSETS_URL}/swagger-ui-bundle.js"></script>
  <script src="/static/docs.js"></script>
</body>
</html>
"""

REDOC = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>mysql-rollback API (ReDoc)</title>
  <link rel="icon" href="{ASSETS_URL}/favicon.png">
</head>
<body>
  <redoc spec-url="/openapi.json"></redoc>
  <script src="{ASSETS_URL}/redoc.standalone.js"></script>
</body>
</html>
"""


@router.get("/docs")
def swagger_ui() -> HTMLResponse:
    return HTMLResponse(SWAGGER)


@router.get("/redoc")
def redoc() -> HTMLResponse:
    return HTMLResponse(REDOC)
