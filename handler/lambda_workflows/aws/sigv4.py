"""SigV4 for the IAM-protected API: botocore's own signer and the default credential chain."""

from __future__ import annotations

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

__all__ = ["MissingCredentials", "sign_request"]


class MissingCredentials(Exception):
    """The default credential chain found nothing to sign with."""


def sign_request(
    method: str, url: str, data: bytes | None, headers: dict[str, str], region: str | None
) -> dict[str, str]:
    """``headers`` plus the SigV4 ones for service ``execute-api``.

    Credentials come from the chain the AWS CLI uses (environment, profile, SSO, instance
    role); the region, when not given, from its configuration (``us-east-1`` without one).

    Raises:
        MissingCredentials: no credentials anywhere in the chain; the message says how to set
            them.
    """
    session = botocore.session.get_session()
    credentials = session.get_credentials()
    if credentials is None:
        raise MissingCredentials(
            f"{url} is protected by IAM and no AWS credentials were found; configure them as "
            "for the AWS CLI (aws configure, AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY)"
        )
    region = region or session.get_config_variable("region") or "us-east-1"
    request = AWSRequest(method=method, url=url, data=data or b"", headers=headers)
    SigV4Auth(credentials, "execute-api", region).add_auth(request)
    return dict(request.headers.items())
