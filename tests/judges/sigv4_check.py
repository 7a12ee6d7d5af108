"""botocore (the AWS SDK for Python) recomputes the SigV4 signature of a captured request and reports
whether it matches: a signer this project did not write judges `earshot say --sigv4`.

usage: sigv4_check.py < request.json
request.json: {"method", "url", "headers": {name: value}, "body_hex", "access_key", "secret_key",
"session_token", "region"}
"""

import json
import sys

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def main() -> None:
    r = json.load(sys.stdin)
    authorization = r["headers"]["authorization"]
    scope = authorization.split("Credential=")[1].split(",")[0]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    claimed = authorization.split("Signature=")[1].strip()
    headers = {name: r["headers"][name] for name in signed if name != "host"}
    request = AWSRequest(method=r["method"], url=r["url"], data=bytes.fromhex(r["body_hex"]), headers=headers)
    auth = SigV4Auth(Credentials(r["access_key"], r["secret_key"], r["session_token"]), "lambda", r["region"])
    request.context["timestamp"] = r["headers"]["x-amz-date"]
    canonical = auth.canonical_request(request)
    expected = auth.signature(auth.string_to_sign(request, canonical), request)
    print(json.dumps({"match": expected == claimed, "scope": scope, "signed_headers": signed, "expected": expected, "claimed": claimed}))


if __name__ == "__main__":
    main()
