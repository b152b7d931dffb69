"""Listing cursors, signed so that only the cursors the API handed out come back in.

A cursor is sealed as :mod:`lambda_workflows.engine.cursors` says (``base64url(payload) "."
base64url(HMAC-SHA256(key, payload))``, checked for length, form and signature before its JSON is
parsed), the payload being a listing's position (a DynamoDB ``LastEvaluatedKey``) or a page's
(:mod:`lambda_workflows.engine.instances.pages`). So a forged cursor is refused as ``InvalidInput``
without ever reaching the JSON parser or a Query.

The key comes from the stack without another AWS service or template resource: a random
32-byte key stored in the instance table itself as one config item (``pk = "C#cursor-key"``,
``sk = "C"``, the key as base64 text, so that tools dumping items as JSON still can). It has
none of the index attributes, so it never appears in a listing or in the recovery sweep, and no
``expires_at``, so TTL never deletes it. The first process that issues a cursor creates it with
a conditional put (first writer wins); a process that loses that race, or whose put timed out
after it was written, reads the winner's key back with a consistent GetItem. Each process caches
the key: a Lambda container pays one GetItem, and only when it first issues or reads a cursor.
Verifying never creates the key: while none exists no cursor was ever issued, so every cursor is
refused and a rejected request writes nothing.

DynamoDB errors are raised as botocore raised them; the store calls these methods inside its
own error boundary, which turns them into domain errors.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from lambda_workflows.engine.cursors import MAX_CURSOR, seal, unseal
from lambda_workflows.engine.errors import StorageError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["CURSOR_KEY_ITEM", "MAX_CURSOR", "CursorSigner"]

CURSOR_KEY_ITEM = {"pk": {"S": "C#cursor-key"}, "sk": {"S": "C"}}
_KEY_BYTES = 32


class CursorSigner:
    """Signs and verifies listing cursors with a key kept in the instance table.

    Args:
        client: a boto3 DynamoDB client (injected: tests pass one bound to moto).
        table: the instance table's name.
    """

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self.client = client
        self.table = table
        self._key: bytes | None = None
        self._lock = threading.Lock()  # the local runtime serves requests from many threads

    def sign(self, payload: Mapping[str, Any]) -> str:
        """A cursor carrying ``payload`` (JSON), creating the stack's key on first use."""
        return seal(self._signing_key(), payload)

    def verify(self, cursor: str) -> Any:
        """The payload of a cursor :meth:`sign` made with this stack's key.

        Raises:
            InvalidInput: anything else: too long, malformed, or a signature that does not
                match (checked before the payload is parsed).
        """
        return unseal(self._verifying_key, cursor)

    # --- the key ----------------------------------------------------------------------------

    def _signing_key(self) -> bytes:
        with self._lock:
            if self._key is None:
                self._key = self._read() or self._create()
            return self._key

    def _verifying_key(self) -> bytes | None:
        with self._lock:
            if self._key is None:
                self._key = self._read()
            return self._key

    def _create(self) -> bytes:
        key = secrets.token_bytes(_KEY_BYTES)
        try:
            self.client.put_item(
                TableName=self.table,
                Item={**CURSOR_KEY_ITEM, "key": {"S": base64.b64encode(key).decode("ascii")}},
                # attribute_not_exists(pk): two processes issuing their first cursor at once
                # must not sign with different keys; the first writer's key is the stack's.
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            # another process won, or our own put landed before a timeout and botocore's retry
            # found it there: either way the stored key is the one to use
            winner = self._read()
            if winner is None:
                raise StorageError(
                    "another process created the cursor key but it could not be read back; retry"
                ) from None
            return winner
        return key

    def _read(self) -> bytes | None:
        found = self.client.get_item(TableName=self.table, Key=CURSOR_KEY_ITEM, ConsistentRead=True)
        item = found.get("Item")
        if item is None:
            return None
        try:
            key = base64.b64decode(item["key"]["S"], validate=True)
        except (KeyError, binascii.Error, ValueError):
            key = b""
        if len(key) != _KEY_BYTES:
            raise StorageError(
                f"the cursor key item {CURSOR_KEY_ITEM['pk']['S']!r} of table {self.table!r} "
                f"does not hold a {_KEY_BYTES}-byte key in base64; delete the item and a new key "
                "is made (cursors already handed out stop working)"
            )
        return key
