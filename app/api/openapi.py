"""The OpenAPI document: FastAPI's, completed with what a client needs to rely on it.

- the bearer security scheme, on every operation that needs a token;
- every error an operation can answer, with its body: 400 (a body that is not JSON or not a
  multipart form, or input the engine refuses), 401, 403, 404 (operations on an id), 409 where a
  route declares it, 422 in the one shape of `validation_error_body`, 429 (throttled sign-ins);
- links from each POST that creates something to the operations on the id it returns, and from
  an upload to the job that reads it.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse

BEARER = "bearer"
ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
VALIDATION_REF = {"$ref": "#/components/schemas/ValidationErrorOut"}

VALIDATION_SCHEMAS: dict[str, Any] = {
    "FieldError": {
        "type": "object",
        "title": "FieldError",
        "required": ["loc", "msg", "type"],
        "properties": {
            "loc": {
                "type": "array",
                "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "description": "where: ['body', 'range', 'stop_position'], ['query', 'limit'], ...",
            },
            "msg": {"type": "string"},
            "type": {"type": "string", "description": "e.g. value_error, missing, json_invalid"},
        },
        "additionalProperties": False,
    },
    "ValidationErrorOut": {
        "type": "object",
        "title": "ValidationErrorOut",
        "required": ["detail"],
        "properties": {"detail": {"type": "array", "items": {"$ref": "#/components/schemas/FieldError"}}},
        "additionalProperties": False,
    },
}

DESCRIPTIONS = {
    "400": "the body is not JSON (or not a multipart form), or the engine refused the input",
    "401": "no valid API token",
    "403": "the token's role is too weak",
    "404": "no such resource",
    "409": "the resource is not in a state that allows this",
    "422": "invalid fields: every error names its field (`loc`)",
    "429": "too many failed authentications from this address",
}


def validation_error_body(errors: list[Any]) -> dict[str, Any]:
    """The one shape of a 422: field errors with loc, msg and type (no echo of the input)."""
    return {
        "detail": [
            {
                "loc": list(error.get("loc", ())),
                "msg": str(error.get("msg", "")),
                "type": str(error.get("type", "")),
            }
            for error in errors
        ]
    }


async def validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return JSONResponse(jsonable_encoder(validation_error_body(list(exc.errors()))), status_code=422)


def _error(status: str, description: str | None = None, schema: dict[str, Any] = ERROR_REF) -> dict[str, Any]:
    return {
        "description": description or DESCRIPTIONS[status],
        "content": {"application/json": {"schema": schema}},
    }


def _complete_operation(path: str, method: str, op: dict[str, Any]) -> None:
    responses: dict[str, Any] = op.setdefault("responses", {})
    needs_token = "401" in responses
    if needs_token:
        op["security"] = [{BEARER: []}]
        responses["429"] = _error("429")
        responses["429"]["headers"] = {
            "Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}
        }
    for status in ("401", "403", "404", "409", "413"):
        if status in responses and "content" not in responses[status]:
            responses[status] = _error(status, responses[status].get("description"))
    if "{" in path and needs_token:
        responses.setdefault("404", _error("404"))
    if "requestBody" in op or needs_token:
        responses.setdefault("400", _error("400"))
    if "422" in responses or op.get("parameters") or "requestBody" in op:
        described = responses.get("422", {}).get("description")
        keep = described if described and described != "Validation Error" else None
        responses["422"] = _error("422", keep, VALIDATION_REF)


def _pointer(path: str, method: str) -> str:
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def _add_links(paths: dict[str, Any]) -> None:
    """POST /x answering {id} -> every operation on /x/{..._id}; POST /api/uploads -> POST /api/jobs."""
    for path, operations in paths.items():
        create = operations.get("post")
        if create is None:
            continue
        success = next((code for code in create["responses"] if code.startswith("2")), None)
        if success is None:
            continue
        own = re.findall(r"\{(\w+)\}", path)
        links: dict[str, Any] = {}
        for target, target_ops in paths.items():
            match = re.fullmatch(re.escape(path) + r"/\{(\w+_id)\}(/.*)?", target)
            if not match:
                continue
            for method in target_ops:
                parameters = {f"path.{name}": f"$request.path.{name}" for name in own}
                parameters[f"path.{match.group(1)}"] = "$response.body#/id"
                name = f"{method.upper()} {target}".replace("{", "").replace("}", "")
                links[re.sub(r"[^A-Za-z0-9_.-]", "_", name)] = {
                    "operationRef": _pointer(target, method),
                    "parameters": parameters,
                }
        if path == "/api/uploads" and "/api/jobs" in paths:
            links["POST_api_jobs_on_this_upload"] = {
                "operationRef": _pointer("/api/jobs", "post"),
                "requestBody": {"upload": "$response.body#/id"},
            }
        if links:
            create["responses"][success]["links"] = links


def build(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    components = schema.setdefault("components", {})
    components.setdefault("securitySchemes", {})[BEARER] = {
        "type": "http",
        "scheme": "bearer",
        "description": "an API token (MYSQL_ROLLBACK_API_TOKENS, or the generated admin token)",
    }
    schemas = components.setdefault("schemas", {})
    schemas.update(VALIDATION_SCHEMAS)
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            _complete_operation(path, method, op)
    _add_links(schema["paths"])
    return schema


def install(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_exception_handler(RequestValidationError, validation_error_handler)
