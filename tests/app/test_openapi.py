"""The OpenAPI document declares what the API answers: the bearer scheme, every error with its
body, one shape for every 422, links from what POST creates; and 405 lists the allowed methods."""

from __future__ import annotations

from tests.app.conftest import OPERATOR, auth


def test_the_document_declares_the_bearer_scheme_and_every_error_body(make_client):
    doc = make_client().get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": doc["components"]["securitySchemes"]["bearer"]["description"],
    }
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            where = f"{method.upper()} {path}"
            responses = op["responses"]
            if path == "/health":
                assert "security" not in op and "401" not in responses
                continue
            assert op["security"] == [{"bearer": []}], where
            for status in ("400", "401", "403", "429"):
                assert "application/json" in responses[status]["content"], (where, status)
            if "{" in path:
                assert responses["404"]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorOut"
                }, where
            if "422" in responses:
                schema = responses["422"]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ValidationErrorOut"}, where
    assert "409" in doc["paths"]["/api/jobs/{job_id}/script"]["get"]["responses"]


def test_links_lead_from_created_jobs_and_uploads_to_the_routes_taking_their_ids(make_client):
    doc = make_client().get("/openapi.json").json()
    job_links = doc["paths"]["/api/jobs"]["post"]["responses"]["202"]["links"]
    targets = {link["operationRef"] for link in job_links.values()}
    assert "#/paths/~1api~1jobs~1{job_id}/get" in targets
    assert "#/paths/~1api~1jobs~1{job_id}~1executions/post" in targets
    assert all(link["parameters"]["path.job_id"] == "$response.body#/id" for link in job_links.values())
    upload_links = doc["paths"]["/api/uploads"]["post"]["responses"]["201"]["links"]
    assert {link["operationRef"] for link in upload_links.values()} == {
        "#/paths/~1api~1uploads~1{upload_id}/get",
        "#/paths/~1api~1jobs/post",
    }


def test_every_422_has_one_shape_and_a_body_that_is_not_json_is_answered_as_documented(make_client):
    client = make_client()
    shapes = []
    for response in (
        client.post("/api/jobs", headers=auth(OPERATOR), json={"range": 5}),  # pydantic's
        client.post("/api/jobs", headers=auth(OPERATOR), json={"server": "nope", "range": {"gtid_set": "x"}}),
        client.get("/api/jobs?limit=0", headers=auth(OPERATOR)),
        client.post(
            "/api/jobs", headers={**auth(OPERATOR), "Content-Type": "application/json"}, content=b"{not json"
        ),
        client.post("/api/uploads", headers=auth(OPERATOR), files=[("files", ("x.000001", b"nope"))]),
    ):
        assert response.status_code == 422, response.text
        for error in response.json()["detail"]:
            shapes.append(set(error))
            assert isinstance(error["loc"], list) and error["msg"] and error["type"]
    assert shapes and all(shape == {"loc", "msg", "type"} for shape in shapes), shapes
    undecodable = client.post(
        "/api/jobs/x/executions",
        headers={**auth(OPERATOR), "Content-Type": "application/json"},
        content=b"L\xff",
    )
    assert undecodable.status_code == 400 and isinstance(undecodable.json()["detail"], str)
    documented = client.get("/openapi.json").json()["paths"]["/api/jobs/{job_id}/executions"]["post"]
    assert "400" in documented["responses"]


def test_405_lists_every_method_of_the_path(make_client):
    client = make_client()
    for path, allowed in (("/api/jobs", "GET, POST"), ("/api/jobs/x/executions", "GET, POST")):
        response = client.request("OPTIONS", path, headers=auth(OPERATOR))
        assert response.status_code == 405 and response.headers["allow"] == allowed, response.headers
        assert client.delete(path, headers=auth(OPERATOR)).headers["allow"] == allowed
