"""Drive botocore/boto3's S3 client against a capture server for the sigv4 interop tests.

    botocore_client.py ENDPOINT BUCKET [--ca-bundle PEM]

Configuration comes from the environment exactly as a user would set it:
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN and
AWS_REQUEST_CHECKSUM_CALCULATION (when_supported by default, or when_required).
Each operation runs in order and prints one JSON line {"op": ..., "ok": ...};
the process exits 1 if any failed. The Go test (botocore_test.go) checks what the
server saw, so this script only checks what the client itself can tell: that each
call returned and gave back the bytes that were sent.
"""

import argparse
import io
import json
import sys
import traceback

import boto3
import urllib3
from botocore.config import Config

SMALL = b"hello from botocore\n" * 3
# Two parts: S3 requires 5 MiB for every part but the last; the capture server does not,
# but keep the real sizes' shape small and cheap: part 1 is 64 KiB + 1, part 2 is 100 bytes.
PART1 = bytes(range(256)) * 256 + b"!"
PART2 = b"p" * 100


class Unseekable(io.RawIOBase):
    """A read-only stream botocore cannot seek or measure, like a pipe."""

    def __init__(self, data):
        self._buf = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        chunk = self._buf.read(len(b))
        b[: len(chunk)] = chunk
        return len(chunk)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("bucket")
    ap.add_argument("--ca-bundle")
    args = ap.parse_args()

    cfg = dict(
        region_name="us-east-1",
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        retries={"max_attempts": 1, "mode": "standard"},
    )
    s3 = boto3.session.Session().client(
        "s3",
        endpoint_url=args.endpoint,
        config=Config(**cfg),
        verify=args.ca_bundle if args.ca_bundle else True,
    )
    http = urllib3.PoolManager(
        cert_reqs="CERT_REQUIRED" if args.ca_bundle else "CERT_NONE",
        ca_certs=args.ca_bundle,
        retries=False,
    )
    b = args.bucket
    failed = 0

    def run(op, fn):
        nonlocal failed
        try:
            detail = fn()
            print(json.dumps({"op": op, "ok": True, "detail": detail}), flush=True)
        except Exception as e:  # report every op, then fail the process
            failed += 1
            print(
                json.dumps({"op": op, "ok": False, "error": repr(e), "trace": traceback.format_exc()}),
                flush=True,
            )

    def expect(cond, msg):
        if not cond:
            raise AssertionError(msg)

    def put_small():
        s3.put_object(Bucket=b, Key="boto/small.txt", Body=SMALL)

    def put_file():
        s3.put_object(Bucket=b, Key="boto/file.bin", Body=io.BytesIO(PART1))

    def put_unseekable():
        # botocore needs a length or a trailer-capable transport for a stream it cannot
        # seek; what it does here (or refuses) is part of the dialect being recorded.
        s3.put_object(Bucket=b, Key="boto/stream.bin", Body=Unseekable(PART2))

    def put_unseekable_length():
        # The same with the length given: botocore can then announce
        # x-amz-decoded-content-length for the aws-chunked body.
        s3.put_object(Bucket=b, Key="boto/stream-len.bin", Body=Unseekable(PART2), ContentLength=len(PART2))

    def get_range():
        r = s3.get_object(Bucket=b, Key="boto/small.txt", Range="bytes=6-10")
        got = r["Body"].read()
        expect(got == SMALL[6:11], f"range body {got!r}")

    def head():
        r = s3.head_object(Bucket=b, Key="boto/small.txt")
        expect(r["ContentLength"] == len(SMALL), f"content length {r['ContentLength']}")

    def list_flat():
        r = s3.list_objects_v2(Bucket=b, Prefix="boto/")
        return sorted(o["Key"] for o in r.get("Contents", []))

    def list_delim():
        r = s3.list_objects_v2(Bucket=b, Prefix="", Delimiter="/")
        return sorted(p["Prefix"] for p in r.get("CommonPrefixes", []))

    def multipart():
        key = "boto/multi.bin"
        up = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
        e1 = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=1, Body=PART1)["ETag"]
        e2 = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=2, Body=PART2)["ETag"]
        s3.complete_multipart_upload(
            Bucket=b,
            Key=key,
            UploadId=up,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]},
        )
        got = s3.get_object(Bucket=b, Key=key)["Body"].read()
        expect(got == PART1 + PART2, "multipart object differs")

    def copy():
        s3.copy_object(Bucket=b, Key="boto/copy.txt", CopySource={"Bucket": b, "Key": "boto/small.txt"})

    def delete_one():
        s3.delete_object(Bucket=b, Key="boto/copy.txt")

    def delete_many():
        r = s3.delete_objects(
            Bucket=b,
            Delete={"Objects": [{"Key": "boto/file.bin"}, {"Key": "boto/stream.bin"}], "Quiet": False},
        )
        expect(not r.get("Errors"), f"errors {r.get('Errors')}")
        return sorted(d["Key"] for d in r.get("Deleted", []))

    def presigned_put():
        url = s3.generate_presigned_url(
            "put_object", Params={"Bucket": b, "Key": "boto/presigned.txt"}, ExpiresIn=900
        )
        r = http.request("PUT", url, body=SMALL)
        expect(r.status == 200, f"status {r.status}: {r.data[:300]!r}")

    def presigned_get():
        url = s3.generate_presigned_url(
            "get_object", Params={"Bucket": b, "Key": "boto/presigned.txt"}, ExpiresIn=900
        )
        r = http.request("GET", url)
        expect(r.status == 200 and r.data == SMALL, f"status {r.status}: {r.data[:300]!r}")

    for op, fn in [
        ("PutObject", put_small),
        ("PutObject/file", put_file),
        ("PutObject/unseekable", put_unseekable),
        ("PutObject/unseekable+length", put_unseekable_length),
        ("GetObject/range", get_range),
        ("HeadObject", head),
        ("ListObjectsV2", list_flat),
        ("ListObjectsV2/delimiter", list_delim),
        ("Multipart", multipart),
        ("CopyObject", copy),
        ("DeleteObject", delete_one),
        ("DeleteObjects", delete_many),
        ("Presigned/PUT", presigned_put),
        ("Presigned/GET", presigned_get),
    ]:
        run(op, fn)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
