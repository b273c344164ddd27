"""An S3 endpoint on 127.0.0.1 (moto's server mode) holding the bundled sample, and the environment that points
s3fs at it; for the tests of sources in object storage. No request leaves 127.0.0.1."""

from __future__ import annotations

import socket
from contextlib import contextmanager
from pathlib import Path

BUCKET = "sft"
SHARDS = 3  # the sample cut into this many parquet shards under s3://sft/sample/


def available() -> bool:
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError:
        return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def s3_server(cache: Path):
    """``(environment, client)``: the variables that make s3fs (and boto3) use the server, ``SFTPACK_CACHE_DIR``
    at ``cache``; the bucket holds the sample whole (``sample.parquet``) and in shards (``sample/part-K.parquet``)."""
    import boto3
    import pyarrow.parquet as pq
    from moto.server import ThreadedMotoServer

    from sftpack.base.bundled import SAMPLE_PATH

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "SFTPACK_CACHE_DIR": str(cache)}
    try:
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        client.upload_file(str(SAMPLE_PATH), BUCKET, "sample.parquet")
        table = pq.read_table(SAMPLE_PATH)
        step = -(-len(table) // SHARDS)
        shards = cache / "upload"
        shards.mkdir(parents=True, exist_ok=True)
        for k in range(SHARDS):
            pq.write_table(table.slice(k * step, step), shards / f"part-{k}.parquet")
            client.upload_file(str(shards / f"part-{k}.parquet"), BUCKET, f"sample/part-{k}.parquet")
        yield env, client
    finally:
        server.stop()
