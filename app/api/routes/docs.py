"""/docs: Swagger UI served from this process. The assets come from fastapi-offline's bundle, so the
page works with no internet and under the CSP (no inline script).

There is no /redoc: ReDoc's bundle always loads its logo from cdn.redoc.ly, a request to the
internet from every operator's browser that opens it."""

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


@router.get("/docs")
def swagger_ui() -> HTMLResponse:
    return HTMLResponse(SWAGGER)
