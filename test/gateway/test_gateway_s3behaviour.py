"""S3 behaviour the gateway must keep, with boto3 against the backend direct
(the baseline) and through the gateway (issue 14, items 7 to 9):

- one request id per response, the error body's;
- a large PutObject the backend refuses from its headers (If-None-Match: *
  over an existing key, a wrong If-Match, a missing bucket) gets the
  backend's answer, not a 503;
- browser-form POST uploads signed with SigV4 (generate_presigned_post),
  and, through the gateway, the forms it must refuse: a key outside the
  credential's grant, an expired or tampered policy, a policy signed by
  another credential, conditions that do not constrain the key."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import os
import xml.etree.ElementTree as ET

import botocore.exceptions
import pytest
import requests

from gwstack import Creds, Stack, Target, need, unique_prefix

MIB = 1 << 20


def _error(e: botocore.exceptions.ClientError) -> tuple[int, str, str]:
    r = e.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], r["ResponseMetadata"].get("RequestId", "")


def test_one_request_id(stack: Stack, target: Target):
    cl = stack.client(target.endpoint, target.creds)
    key = target.prefix + "rid.bin"
    seen = []
    cl.meta.events.register("after-call.s3", lambda http_response, **_: seen.append(http_response))
    cl.put_object(Bucket=stack.bucket, Key=key, Body=b"x")
    cl.get_object(Bucket=stack.bucket, Key=key)["Body"].read()
    cl.head_object(Bucket=stack.bucket, Key=key)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        cl.get_object(Bucket=stack.bucket, Key=target.prefix + "missing.bin")
    status, code, rid = _error(e.value)
    assert (status, code) == (404, "NoSuchKey")
    assert "," not in rid, f"two request ids: {rid!r}"
    # The error document names the request id the header does.
    body = seen[-1].content
    assert ET.fromstring(body).findtext("RequestId") == rid
    for r in seen:
        ids = [v for k, v in r.raw.headers.items() if k.lower() == "x-amz-request-id"]
        assert len(set(ids)) == 1, ids


@pytest.mark.parametrize("size", [1 * MIB, 16 * MIB])
@pytest.mark.parametrize("checksums", ["when_supported", "when_required"])
def test_large_put_refused_early(stack: Stack, target: Target, size: int, checksums: str):
    cl = stack.client(target.endpoint, target.creds, checksums)
    key = target.prefix + f"early-{size}-{checksums}.bin"
    cl.put_object(Bucket=stack.bucket, Key=key, Body=b"old content")
    data = os.urandom(size)
    for cond, value in [("IfNoneMatch", "*"), ("IfMatch", '"0123456789abcdef0123456789abcdef"')]:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            cl.put_object(Bucket=stack.bucket, Key=key, Body=data, **{cond: value})
        assert _error(e.value)[:2] == (412, "PreconditionFailed"), (cond, e.value.response)
    assert stack.backend_get(key) == b"old content"


@pytest.mark.parametrize("size", [1 * MIB, 16 * MIB])
def test_large_put_missing_bucket(stack: Stack, target: Target, size: int):
    bucket = "missing-" + os.urandom(4).hex()
    creds = target.creds
    if target.name == "gateway":
        creds = stack.mint(f"{bucket}:data/:rw", principal="interop-missing-bucket")
    cl = stack.client(target.endpoint, creds)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        cl.put_object(Bucket=bucket, Key="data/x.bin", Body=os.urandom(size))
    assert _error(e.value)[:2] == (404, "NoSuchBucket"), e.value.response


def _post(p: dict, data: bytes, filename: str = "upload.bin") -> requests.Response:
    return requests.post(p["url"], data=p["fields"], files={"file": (filename, data)}, timeout=120)


@pytest.mark.parametrize("size", [10, 3 * MIB])
def test_presigned_post(stack: Stack, target: Target, size: int):
    cl = stack.client(target.endpoint, target.creds)
    key = target.prefix + f"form-{size}.bin"
    data = os.urandom(size)
    p = cl.generate_presigned_post(
        stack.bucket, key, Fields={"Content-Type": "text/plain"},
        Conditions=[{"Content-Type": "text/plain"}, ["content-length-range", 0, 4 * MIB]], ExpiresIn=600)
    r = _post(p, data)
    assert r.status_code == 204, r.text
    assert r.headers["ETag"]
    assert stack.backend_get(key) == data
    assert stack.backend().head_object(Bucket=stack.bucket, Key=key)["ContentType"] == "text/plain"

    # success_action_status 201 answers a PostResponse document.
    key201 = target.prefix + f"form-{size}-201.bin"
    p = cl.generate_presigned_post(stack.bucket, key201, Fields={"success_action_status": "201"},
                                   Conditions=[{"success_action_status": "201"}], ExpiresIn=600)
    r = _post(p, data)
    assert r.status_code == 201, r.text
    doc = {el.tag.rpartition("}")[2]: el.text for el in ET.fromstring(r.content)}
    assert doc["Key"] == key201 and doc["Bucket"] == stack.bucket and doc["ETag"], r.text
    assert stack.backend_get(key201) == data


# The refusals below are the gateway's: the backend direct, with its root
# keys, has no grant to step outside of.


@pytest.fixture
def gw(gateway_stack: Stack):
    prefix = unique_prefix("form-refused")
    creds = gateway_stack.mint(f"{gateway_stack.bucket}:{prefix}:rw", principal="interop-form")
    return gateway_stack, prefix, creds


def _sign(creds: Creds, policy: dict, region: str) -> dict:
    """The form fields of policy signed with creds, as S3's POST policy
    signing works (the policy must name the credential, date and token)."""
    b64 = base64.b64encode(json.dumps(policy).encode()).decode()
    cred = next(c["x-amz-credential"] for c in policy["conditions"] if isinstance(c, dict) and "x-amz-credential" in c)
    date = cred.split("/")[1]
    k = ("AWS4" + creds.secret_access_key).encode()
    for part in (date, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return {"policy": b64, "x-amz-signature": hmac.new(k, b64.encode(), hashlib.sha256).hexdigest()}


def _policy(creds: Creds, stack: Stack, conditions: list, expires: datetime.timedelta = datetime.timedelta(minutes=10)):
    now = datetime.datetime.now(datetime.timezone.utc)
    date = now.strftime("%Y%m%d")
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    cred = f"{creds.access_key_id}/{date}/{stack.region}/s3/aws4_request"
    fields = {"x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": cred, "x-amz-date": amz_date,
              "x-amz-security-token": creds.session_token}
    policy = {"expiration": (now + expires).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "conditions": [{"bucket": stack.bucket}, *conditions, *({k: v} for k, v in fields.items())]}
    return policy, fields


def _refused(stack: Stack, fields: dict, key: str, status: int, code: str):
    r = requests.post(f"{stack.gateway}/{stack.bucket}", data=fields, files={"file": ("f.bin", b"data")}, timeout=60)
    assert r.status_code == status, r.text
    assert ET.fromstring(r.content).findtext("Code") == code, r.text
    assert ET.fromstring(r.content).findtext("RequestId") == r.headers["x-amz-request-id"]
    assert stack.backend_get(key) is None


def test_post_key_outside_grant(gw):
    stack, prefix, creds = gw
    outside = "outside-" + os.urandom(4).hex() + "/x.bin"
    cl = stack.client(stack.gateway, creds)
    # boto3 signs ["starts-with", "$key", ""] for a key of "${filename}".
    p = cl.generate_presigned_post(stack.bucket, "${filename}", ExpiresIn=600)
    r = _post(p, b"data", filename=outside.replace("/", "_"))
    assert r.status_code == 403 and ET.fromstring(r.content).findtext("Code") == "AccessDenied", r.text
    policy, fields = _policy(creds, stack, [["starts-with", "$key", ""]])
    _refused(stack, {"key": outside, **fields, **_sign(creds, policy, stack.region)}, outside, 403, "AccessDenied")


def test_post_expired_policy(gw):
    stack, prefix, creds = gw
    key = prefix + "expired.bin"
    policy, fields = _policy(creds, stack, [{"key": key}], expires=datetime.timedelta(seconds=-5))
    _refused(stack, {"key": key, **fields, **_sign(creds, policy, stack.region)}, key, 403, "AccessDenied")


def test_post_tampered_policy(gw):
    stack, prefix, creds = gw
    key = prefix + "elsewhere/x.bin"
    policy, fields = _policy(creds, stack, [["starts-with", "$key", prefix + "mine/"]])
    signed = _sign(creds, policy, stack.region)
    policy["conditions"][1] = ["starts-with", "$key", prefix]
    tampered = base64.b64encode(json.dumps(policy).encode()).decode()
    _refused(stack, {"key": key, **fields, **signed, "policy": tampered}, key, 403, "SignatureDoesNotMatch")


def test_post_signed_by_another_credential(gw):
    stack, prefix, creds = gw
    other = stack.mint(f"{stack.bucket}:{prefix}:rw", principal="interop-form-other")
    key = prefix + "forged.bin"
    policy, fields = _policy(creds, stack, [{"key": key}])
    _refused(stack, {"key": key, **fields, **_sign(other, policy, stack.region)}, key, 403, "SignatureDoesNotMatch")


def test_post_conditions_do_not_constrain_key(gw):
    stack, prefix, creds = gw
    key = prefix + "free.bin"
    policy, fields = _policy(creds, stack, [])
    _refused(stack, {"key": key, **fields, **_sign(creds, policy, stack.region)}, key, 403, "AccessDenied")
