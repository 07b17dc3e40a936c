"""google-genai (the Gemini API's Python SDK), unchanged, against the mock.

mock/gemini_python_test.go starts two mocks and runs this with
GEMINI_BASE_URL (the mock's URL), GEMINI_LIMITED_URL (one whose key allows
one request a minute) and VERTEX_BASE_URL (the first mock again, for the
Vertex AI backend): generate_content, the stream, a forced function call,
response_schema; then the 429s: one attempt without retry_options, three
with HttpRetryOptions(attempts=3). Any failure exits non-zero naming the
check.
"""

import json
import os
import sys

import google.auth.credentials
from google import genai
from google.genai import errors, types

BASE = os.environ["GEMINI_BASE_URL"]
LIMITED = os.environ["GEMINI_LIMITED_URL"]
KEY = "sk-test"
MODEL = "gemini-2.5-flash"
failed = 0


def check(name, fn):
    global failed
    try:
        fn()
        print("ok  ", name)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        failed += 1
        print("FAIL", name, "-", repr(e))


WEATHER = types.Schema(
    type=types.Type.OBJECT,
    required=["city", "days"],
    properties={
        "city": types.Schema(type=types.Type.STRING),
        "days": types.Schema(type=types.Type.INTEGER, minimum=1, maximum=7),
        "note": types.Schema(type=types.Type.STRING, nullable=True),
    },
)


def valid_weather(d):
    assert isinstance(d["city"], str), d
    assert isinstance(d["days"], int) and 1 <= d["days"] <= 7, d


class StaticToken(google.auth.credentials.Credentials):
    """Credentials of one bearer token, as an access token from ADC is."""

    def __init__(self, token):
        super().__init__()
        self.token = token

    def refresh(self, request):
        pass

    @property
    def expired(self):
        return False

    @property
    def valid(self):
        return True


def run(client, label):
    state = {}

    def plain():
        r = client.models.generate_content(model=MODEL, contents="Say hello.",
                                           config=types.GenerateContentConfig(max_output_tokens=64))
        state["text"] = r.text
        assert r.text, "empty text"
        assert r.candidates[0].finish_reason == types.FinishReason.STOP, r.candidates[0].finish_reason
        assert r.usage_metadata.candidates_token_count == 12, r.usage_metadata

    def stream():
        text, chunks, last = "", 0, None
        for c in client.models.generate_content_stream(model=MODEL, contents="Say hello.",
                                                       config=types.GenerateContentConfig(max_output_tokens=64)):
            text += c.text or ""
            chunks += 1
            last = c
        assert text == state["text"], (text, state["text"])
        assert chunks > 1 and last.candidates[0].finish_reason == types.FinishReason.STOP, (chunks, last)

    def tool():
        r = client.models.generate_content(
            model=MODEL, contents="Weather in Paris?",
            config=types.GenerateContentConfig(
                tools=[types.Tool(function_declarations=[types.FunctionDeclaration(name="get_weather", parameters=WEATHER)])],
                tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode="ANY")),
                automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            ))
        calls = r.function_calls
        assert calls and len(calls) == 1 and calls[0].name == "get_weather", calls
        valid_weather(calls[0].args)

    def schema():
        r = client.models.generate_content(
            model=MODEL, contents="Weather as JSON",
            config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=WEATHER,
                                               max_output_tokens=1024))
        valid_weather(json.loads(r.text))

    check(f"{label} generate_content", plain)
    check(f"{label} generate_content_stream", stream)
    check(f"{label} function call", tool)
    check(f"{label} response_schema", schema)


run(genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=BASE)), "gemini")
run(genai.Client(vertexai=True, project="my-project", location="us-central1", credentials=StaticToken(KEY),
                 http_options=types.HttpOptions(base_url=os.environ["VERTEX_BASE_URL"])), "vertex")


def rate_limited():
    lim = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=LIMITED))
    lim.models.generate_content(model=MODEL, contents="hi")
    try:
        lim.models.generate_content(model=MODEL, contents="hi")
        raise AssertionError("no error")
    except errors.ClientError as e:
        assert e.code == 429 and e.status == "RESOURCE_EXHAUSTED", (e.code, e.status)
        kinds = [d.get("@type", "") for d in e.details["error"]["details"]]
        assert any(k.endswith("RetryInfo") for k in kinds) and any(k.endswith("QuotaFailure") for k in kinds), kinds


def retried():
    r = genai.Client(api_key=KEY, http_options=types.HttpOptions(
        base_url=LIMITED, retry_options=types.HttpRetryOptions(attempts=3, initial_delay=0.05, jitter=0)))
    try:
        r.models.generate_content(model=MODEL, contents="hi")
        raise AssertionError("no error")
    except errors.ClientError as e:
        assert e.code == 429, e.code


check("gemini 429, not retried", rate_limited)
check("gemini 429, retry_options attempts 3", retried)
if failed:
    print(f"{failed} check(s) failed")
    sys.exit(1)
