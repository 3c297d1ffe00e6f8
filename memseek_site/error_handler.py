"""The DRF exception handler: renders every failure in the one error envelope.

An ``ApiError`` of any subclass answers with the status ``ERROR_STATUS`` gives its code; DRF's
own exceptions map to the codes below; a database that cannot be reached (or drops the
connection mid-request) is ``503 database_unavailable`` with ``Retry-After``; a statement
PostgreSQL cancelled at the request's deadline is ``503 deadline_exceeded``, also with
``Retry-After`` (``memseek_site.deadline``); an error whose envelope carries ``retry_after_s``
(``429 rate_limited``) sends it as ``Retry-After`` too; anything else is a logged ``internal_error``. A 401
carries ``WWW-Authenticate: Bearer`` (RFC 6750), with ``error="invalid_token"`` when a key was
sent, so a client shows "wrong key", not an OAuth sign-in. Django discards a connection that
failed when the request ends, so the
next request reconnects by itself once the database is back.
"""
from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from . import deadline
from .errors import ERROR_STATUS, ApiError

logger = logging.getLogger(__name__)

# Seconds a client should wait before retrying while the database is unavailable.
DATABASE_RETRY_AFTER_S = 5
BEARER_REALM = 'Bearer realm="memseek"'
# The envelope member that holds the seconds an error asks the client to wait, as the header does.
RETRY_AFTER_MEMBER = "retry_after_s"


def error_response(error: ApiError) -> Response:
    if error.code not in ERROR_STATUS:
        # A domain error with no HTTP contract (a catalog issue, a provider failure) escaped its
        # caller: that is a bug, not a client mistake.
        logger.error("unregistered error code %r reached the API: %s", error.code, error.detail)
        error = ApiError("internal_error", "An unexpected error occurred.")
    response = Response(error.envelope(), status=ERROR_STATUS[error.code])
    if error.code == "deadline_exceeded":
        response["Retry-After"] = str(deadline.RETRY_AFTER_S)
    elif RETRY_AFTER_MEMBER in error.extra:
        response["Retry-After"] = str(error.extra[RETRY_AFTER_MEMBER])
    return response


def api_exception_handler(exc, context):
    response = _rendered(exc, context)
    if response.status_code == 401:
        request = context.get("request")
        sent_key = request is not None and bool(request.META.get("HTTP_AUTHORIZATION", "").strip())
        response["WWW-Authenticate"] = BEARER_REALM + (', error="invalid_token"' if sent_key else "")
    return response


def _rendered(exc, context) -> Response:
    if isinstance(exc, ApiError):
        return error_response(exc)
    if isinstance(exc, drf_exceptions.ParseError):
        return error_response(ApiError("invalid_json", f"The body is not valid JSON: {exc.detail}"))
    if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        return error_response(ApiError("unauthorized", str(exc.detail)))
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return error_response(ApiError("method_not_allowed", str(exc.detail)))
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return error_response(ApiError("unsupported_media_type", str(exc.detail)))
    if isinstance(exc, (Http404, drf_exceptions.NotFound)):
        return error_response(ApiError("not_found", "No such route or object."))
    if isinstance(exc, OperationalError) and deadline.is_statement_timeout(exc):
        return error_response(deadline.exceeded("database"))
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("database unavailable: %s", exc)
        response = error_response(ApiError("database_unavailable", "The database cannot be reached; retry in a few "
                                                                   "seconds."))
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
        return response
    if isinstance(exc, drf_exceptions.APIException):
        return error_response(ApiError("request_schema", str(exc.detail)))
    logger.exception("unexpected error in %s", context.get("view").__class__.__name__)
    return error_response(ApiError("internal_error", "An unexpected error occurred."))
