"""The Swagger UI route, registered without importing Powertools' OpenAPI models.

``APIGatewayRestResolver.enable_swagger`` imports the OpenAPI models (pydantic models of the
whole OpenAPI specification: the heaviest import of the API function, above boto3 itself) when
it registers the route, so every cold start paid for them. This route serves what it serves
(the page with the bundled assets and the document embedded, ``?format=json`` for the document
alone, ``?format=oauth2-redirect``) and imports them on its own first request only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aws_lambda_powertools.event_handler as event_handler
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

__all__ = ["add_swagger_ui"]

_ASSETS = Path(event_handler.__file__).parent / "openapi" / "swagger_ui"


def add_swagger_ui(app: APIGatewayRestResolver, path: str, server_url: Callable[[], str]) -> None:
    """Serve the Swagger UI of ``app``'s OpenAPI document at ``path``; the document names
    ``server_url()`` (where the request came through) as its server."""

    @app.get(path, include_in_schema=False)
    def swagger_ui() -> Response[str]:
        from aws_lambda_powertools.event_handler.openapi.models import Server
        from aws_lambda_powertools.event_handler.openapi.swagger_ui import (
            generate_oauth2_redirect_html,
            generate_swagger_html,
        )

        query = app.current_event.query_string_parameters or {}
        if query.get("format") == "oauth2-redirect":
            return Response(200, "text/html", generate_oauth2_redirect_html())
        document = app.get_openapi_json_schema(servers=[Server(url=server_url())])
        # '</' inside the page's script would end it: the document is embedded escaped
        spec = document.replace("</", "<\\/")
        if query.get("format") == "json":
            return Response(200, "application/json", spec)
        js = (_ASSETS / "swagger-ui-bundle.min.js").read_text(encoding="utf-8")
        css = (_ASSETS / "swagger-ui.min.css").read_text(encoding="utf-8")
        return Response(200, "text/html", generate_swagger_html(spec, js, css, "", None))
