"""boto3's bedrock-runtime client, unchanged, through the recording proxy
(driven by internal/recordproxy/boto3_test.go's TestBoto3ThroughProxy).

PROXY_URL is a proxy allowing one request at a time in front of a mock
that verifies the SigV4 signature of this key. The script opens a
converse_stream and holds it unread, so that the proxy refuses the
converse that follows with its own 429; botocore's retry hook drains the
stream (freeing the slot) before botocore backs off and retries. It prints
one JSON line: what the SDK saw.
"""

import json
import os

import boto3
import botocore
import botocore.config

MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"

c = boto3.client(
    "bedrock-runtime",
    region_name="us-east-1",
    endpoint_url=os.environ["PROXY_URL"],
    aws_access_key_id="AKIDPROXYPY",
    aws_secret_access_key="proxy-secret",
    # Standard mode, with attempts to spare: the proxy frees the slot a
    # moment after the stream's last byte.
    config=botocore.config.Config(retries={"mode": "standard", "max_attempts": 5}),
)


def user(text):
    return [{"role": "user", "content": [{"text": text}]}]


held = c.converse_stream(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 12})["stream"]
seen = {"deltas": 0, "throttles": [], "stop": None}


def drain():
    for ev in held:
        if "contentBlockDelta" in ev:
            seen["deltas"] += 1
        if "messageStop" in ev:
            seen["stop"] = ev["messageStop"]["stopReason"]


def on_retry(response=None, attempts=None, **_):
    # After each attempt of the converse, before botocore decides.
    if response is not None and response[0].status_code == 429:
        seen["throttles"].append({"attempt": attempts, "code": response[1]["Error"]["Code"],
                                  "retry_after": response[0].headers.get("retry-after")})
        if seen["stop"] is None:
            drain()


c.meta.events.register("needs-retry.bedrock-runtime.Converse", on_retry)
out = c.converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 12})
assert out["stopReason"] == "max_tokens" and out["usage"]["outputTokens"] == 12, out
assert seen["stop"] == "max_tokens", seen
print(json.dumps({"retries": out["ResponseMetadata"]["RetryAttempts"], "output_tokens": out["usage"]["outputTokens"],
                  "stream_deltas": seen["deltas"], "throttles": seen["throttles"], "botocore": botocore.__version__}))
