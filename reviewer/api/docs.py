"""The API's docs page: the OpenAPI document rendered on the server, so it
needs no script or style from elsewhere and runs under the app's CSP."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

METHODS = ("get", "post", "put", "delete")


def _ref_name(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array" and "items" in schema:
        return f"list of {_ref_name(schema['items'])}"
    if "anyOf" in schema:
        return " or ".join(_ref_name(x) for x in schema["anyOf"])
    return str(schema.get("type", "object"))


@require_GET
def docs(request: HttpRequest) -> HttpResponse:
    from .views import api

    spec = api.get_openapi_schema(path_prefix=request.path.rsplit("/", 1)[0])
    operations = []
    for path, item in spec["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            params = [
                {
                    "name": p["name"],
                    "where": p["in"],
                    "required": p.get("required", False),
                    "type": _ref_name(p.get("schema", {})),
                }
                for p in op.get("parameters", [])
            ]
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            responses = [
                {
                    "status": status,
                    "type": _ref_name(r.get("content", {}).get("application/json", {}).get("schema", {})),
                }
                for status, r in sorted(op.get("responses", {}).items())
            ]
            operations.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "name": op.get("operationId", ""),
                    "summary": op.get("summary", ""),
                    "params": params,
                    "body": _ref_name(body) if body else None,
                    "responses": responses,
                }
            )
    schemas = {name: json.dumps(schema, indent=2) for name, schema in spec["components"]["schemas"].items()}
    return render(request, "reviewer/api_docs.html", {"spec": spec, "operations": operations, "schemas": schemas})
