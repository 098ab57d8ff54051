"""Sends PutObject requests with boto3 to a capture server (see
TestRegenerateBotocoreFixtures in ../../chunked_test.go), which stores each
aws-chunked body as a fixture. Usage: capture_boto3.py <https endpoint> <ca pem>

boto3 puts checksums in an aws-chunked trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER)
only over TLS, hence the https endpoint.
"""
import io
import sys

import boto3
from botocore.config import Config

endpoint, ca = sys.argv[1], sys.argv[2]
s3 = boto3.client(
    "s3",
    endpoint_url=endpoint,
    region_name="us-east-1",
    aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
    aws_secret_access_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    verify=ca,
)

# The payload the Go test expects: byte i is (i*7) % 251.
payload = bytes((i * 7) % 251 for i in range(20000))


class Trickle(io.RawIOBase):
    """A non-seekable body whose reads return at most 3000 bytes, so botocore
    sends many small chunks."""

    def __init__(self, data):
        self._data = data

    def readable(self):
        return True

    def read(self, size=-1):
        n = 3000 if size is None or size < 0 else min(size, 3000)
        out, self._data = self._data[:n], self._data[n:]
        return out


s3.put_object(Bucket="bucket", Key="default", Body=payload)
s3.put_object(Bucket="bucket", Key="sha256", Body=payload, ChecksumAlgorithm="SHA256")
s3.put_object(Bucket="bucket", Key="sha1-empty", Body=b"", ChecksumAlgorithm="SHA1")  # CRC64NVME needs botocore[crt]
s3.put_object(
    Bucket="bucket", Key="crc32-trickle", Body=Trickle(payload), ChecksumAlgorithm="CRC32", ContentLength=len(payload)
)
