"""boto3 through the gateway (and against the backend direct as the baseline):
put, get, range get, head, list with and without a delimiter, copy, multipart,
delete, batch delete, presigned GET and PUT; every object written reads back
byte-identical from the backend directly."""

from __future__ import annotations

import os
import urllib.parse
import urllib.request

import pytest

from gwstack import Stack, Target

MIB = 1 << 20
KEYS = ["a.bin", "dir/b.bin", "dir/c d+e=é.bin"]


@pytest.mark.parametrize("checksums", ["when_supported", "when_required"])
def test_boto3(stack: Stack, target: Target, checksums: str):
    cl = stack.client(target.endpoint, target.creds, checksums)
    bucket = stack.bucket
    prefix = target.prefix + checksums + "/"
    objs: dict[str, bytes] = {}
    for i, k in enumerate(KEYS):
        key = prefix + k
        objs[key] = os.urandom(1024 + 333 * i)
        cl.put_object(Bucket=bucket, Key=key, Body=objs[key])
    a = prefix + "a.bin"

    for key, want in objs.items():
        assert cl.get_object(Bucket=bucket, Key=key)["Body"].read() == want, key
    assert cl.get_object(Bucket=bucket, Key=a, Range="bytes=100-199")["Body"].read() == objs[a][100:200]
    assert cl.get_object(Bucket=bucket, Key=a, Range="bytes=-10")["Body"].read() == objs[a][-10:]

    head = cl.head_object(Bucket=bucket, Key=a)
    assert head["ContentLength"] == len(objs[a])
    assert head["ETag"]

    listed = cl.list_objects_v2(Bucket=bucket, Prefix=prefix)
    assert [o["Key"] for o in listed["Contents"]] == sorted(objs)
    listed = cl.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/")
    assert [o["Key"] for o in listed["Contents"]] == [a]
    assert [p["Prefix"] for p in listed["CommonPrefixes"]] == [prefix + "dir/"]
    # ListObjects (v1) too: older clients still use it.
    listed = cl.list_objects(Bucket=bucket, Prefix=prefix, Delimiter="/")
    assert [o["Key"] for o in listed["Contents"]] == [a]

    cp = prefix + "copy.bin"
    cl.copy_object(Bucket=bucket, Key=cp, CopySource={"Bucket": bucket, "Key": a})
    objs[cp] = objs[a]

    mp = prefix + "multi part.bin"
    data = os.urandom(6 * MIB + 3)
    # As boto3's own transfer manager does: with checksums on, the upload is
    # created with the algorithm its parts carry (else Complete must not name them).
    extra = {"ChecksumAlgorithm": "CRC32"} if checksums == "when_supported" else {}
    up = cl.create_multipart_upload(Bucket=bucket, Key=mp, **extra)
    parts = []
    for n, chunk in enumerate([data[: 5 * MIB], data[5 * MIB :]], start=1):
        r = cl.upload_part(Bucket=bucket, Key=mp, UploadId=up["UploadId"], PartNumber=n, Body=chunk)
        part = {"PartNumber": n, "ETag": r["ETag"]}
        for c in ("ChecksumCRC32", "ChecksumCRC32C", "ChecksumCRC64NVME", "ChecksumSHA1", "ChecksumSHA256"):
            if c in r:
                part[c] = r[c]
        parts.append(part)
    assert len(cl.list_parts(Bucket=bucket, Key=mp, UploadId=up["UploadId"])["Parts"]) == 2
    cl.complete_multipart_upload(Bucket=bucket, Key=mp, UploadId=up["UploadId"], MultipartUpload={"Parts": parts})
    objs[mp] = data
    assert cl.get_object(Bucket=bucket, Key=mp)["Body"].read() == data

    # An aborted upload leaves nothing behind.
    ab = prefix + "aborted.bin"
    up = cl.create_multipart_upload(Bucket=bucket, Key=ab)
    cl.upload_part(Bucket=bucket, Key=ab, UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 1024)
    cl.abort_multipart_upload(Bucket=bucket, Key=ab, UploadId=up["UploadId"])

    for key, want in objs.items():
        assert stack.backend_get(key) == want, f"backend copy of {key} differs"
    assert stack.backend_get(ab) is None

    cl.delete_object(Bucket=bucket, Key=a)
    with pytest.raises(cl.exceptions.ClientError) as e:
        cl.head_object(Bucket=bucket, Key=a)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert stack.backend_get(a) is None
    del objs[a]

    r = cl.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in sorted(objs)]})
    assert not r.get("Errors"), r.get("Errors")
    assert len(r["Deleted"]) == len(objs)
    assert stack.backend_keys(prefix) == []


def test_boto3_presigned(stack: Stack, target: Target):
    cl = stack.client(target.endpoint, target.creds)
    key = target.prefix + "presigned/x y+z.bin"
    data = os.urandom(4096)

    url = cl.generate_presigned_url("put_object", Params={"Bucket": stack.bucket, "Key": key}, ExpiresIn=600)
    req = urllib.request.Request(url, data=data, method="PUT")
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200
    assert stack.backend_get(key) == data

    url = cl.generate_presigned_url("get_object", Params={"Bucket": stack.bucket, "Key": key}, ExpiresIn=600)
    with urllib.request.urlopen(url) as resp:
        assert resp.read() == data

    # A presigned URL is good for its object only: another key in the same
    # URL fails the signature.
    other = url.replace(urllib.parse.quote(key.split("/")[-1]), "other.bin")
    assert other != url
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(other)
    assert e.value.code == 403
