"""boto3's bedrock-runtime client, unchanged, against mockllm's Bedrock
Runtime (driven by mock/bedrock_python_test.go's TestPythonBedrock).

BEDROCK_BASE_URL is a mock without faults; BEDROCK_THROTTLE_URL throttles
the first attempt of each call (by amz-sdk-request), BEDROCK_RPM_URL allows
one request a minute, BEDROCK_NOT_READY_URL answers ModelNotReadyException
to the first two attempts. Each check prints one line; a failed assertion
exits non-zero.
"""

import json
import os

import boto3
import botocore
import botocore.exceptions

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
WEATHER = {
    "type": "object",
    "additionalProperties": False,
    "required": ["city", "unit"],
    "properties": {"city": {"type": "string", "minLength": 1}, "unit": {"enum": ["c", "f"]}},
}


def client(env, secret="not-checked"):
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=os.environ[env],
        aws_access_key_id="AKIDPYTHONTEST",
        aws_secret_access_key=secret,
    )


def user(text):
    return [{"role": "user", "content": [{"text": text}]}]


def valid_weather(doc):
    return isinstance(doc.get("city"), str) and doc["city"] and doc.get("unit") in ("c", "f") and set(doc) <= {"city", "unit"}


c = client("BEDROCK_BASE_URL")
out = c.converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 12})
assert out["output"]["message"]["content"][0]["text"] == os.environ["FILLER_12"], out
assert out["stopReason"] == "max_tokens" and out["usage"]["outputTokens"] == 12 and out["usage"]["inputTokens"] > 0, out
assert "latencyMs" in out["metrics"], out
print("boto3 converse: ok")

st = c.converse_stream(modelId="us.anthropic.claude-haiku-4-5-20251001-v1:0", messages=user("Hello"), inferenceConfig={"maxTokens": 12})
text, stop, usage = "", None, None
for ev in st["stream"]:
    if "contentBlockDelta" in ev:
        text += ev["contentBlockDelta"]["delta"]["text"]
    if "messageStop" in ev:
        stop = ev["messageStop"]["stopReason"]
    if "metadata" in ev:
        usage = ev["metadata"]["usage"]
assert text == os.environ["FILLER_12"] and stop == "max_tokens" and usage["outputTokens"] == 12, (text, stop, usage)
print("boto3 converse_stream: ok")

tc = c.converse(
    modelId=MODEL,
    messages=user("Weather in Paris?"),
    inferenceConfig={"maxTokens": 400},
    toolConfig={"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": WEATHER}}}], "toolChoice": {"tool": {"name": "get_weather"}}},
)
tu = tc["output"]["message"]["content"][0]["toolUse"]
assert tc["stopReason"] == "tool_use" and tu["name"] == "get_weather" and tu["toolUseId"].startswith("tooluse_"), tc
assert valid_weather(tu["input"]), tu
print("boto3 tool call: ok", json.dumps(tu["input"]))

so = c.converse(
    modelId=MODEL,
    messages=user("Weather in Paris?"),
    inferenceConfig={"maxTokens": 400},
    outputConfig={"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": json.dumps(WEATHER), "name": "weather"}}}},
)
assert valid_weather(json.loads(so["output"]["message"]["content"][0]["text"])), so
print("boto3 structured output: ok")

inv = c.invoke_model(
    modelId=MODEL,
    body=json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]}),
)
msg = json.loads(inv["body"].read())
assert msg["content"][0]["text"] == os.environ["FILLER_5"] and msg["stop_reason"] == "max_tokens", msg
print("boto3 invoke_model: ok")

try:
    c.converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"temperature": 1.5})
    raise AssertionError("temperature 1.5 was accepted")
except c.exceptions.ValidationException as e:
    assert "inferenceConfig.temperature" in str(e) and e.response["ResponseMetadata"]["RetryAttempts"] == 0, e
    print("boto3 validation error: ok")

# The standard retry mode (botocore's default): 3 attempts, a throttle
# retried after rand(0, 1) x 1 s.
ok = client("BEDROCK_THROTTLE_URL").converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 3})
assert ok["ResponseMetadata"]["RetryAttempts"] == 1, ok["ResponseMetadata"]
print("boto3 throttle retried: ok, retries", ok["ResponseMetadata"]["RetryAttempts"])

rpm = client("BEDROCK_RPM_URL")
rpm.converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 3})
try:
    rpm.converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 3})
    raise AssertionError("the second call under rpm 1 succeeded")
except rpm.exceptions.ThrottlingException as e:
    md = e.response["ResponseMetadata"]
    assert md["HTTPStatusCode"] == 429 and md["RetryAttempts"] == 2 and "retry-after" not in md["HTTPHeaders"], md
    assert e.response["Error"]["Message"].startswith("Too many requests"), e.response
    print("boto3 throttle exhausted: ok, retries", md["RetryAttempts"])

# ModelNotReadyException is modeled retryable: botocore retries it.
nr = client("BEDROCK_NOT_READY_URL").converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 3})
assert nr["ResponseMetadata"]["RetryAttempts"] == 2, nr["ResponseMetadata"]
print("boto3 model-not-ready retried: ok, retries", nr["ResponseMetadata"]["RetryAttempts"])
# BEDROCK_SIGNED_URL knows this key's secret and verifies botocore's
# signature for real.
signed = client("BEDROCK_SIGNED_URL", "py-secret")
signed.converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 3})
for ev in signed.converse_stream(modelId="us.anthropic.claude-haiku-4-5-20251001-v1:0", messages=user("Hello"), inferenceConfig={"maxTokens": 3})["stream"]:
    pass
try:
    client("BEDROCK_SIGNED_URL", "wrong").converse(modelId=MODEL, messages=user("Hello"), inferenceConfig={"maxTokens": 3})
    raise AssertionError("a wrong secret was accepted")
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidSignatureException" and e.response["ResponseMetadata"]["HTTPStatusCode"] == 403, e.response
    print("boto3 sigv4 verified: ok")

print("boto3", boto3.__version__, "botocore", botocore.__version__, ": all checks passed")
