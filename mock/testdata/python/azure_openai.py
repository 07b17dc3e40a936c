"""openai.AzureOpenAI, unchanged, against mockllm's Azure OpenAI paths
(driven by mock/azure_clients_test.go). Prints one line per check, "ok
NAME ..." or raises. MOCK_URL is the mock's base URL; the deployments
chat-prod and limited serve gpt-4o, limited one request at once, then one
a second (rpm 60, burst 1s), mini gpt-4o-mini; MOCK_FILTER_URL is a mock whose content
filter refuses every prompt."""

import json
import logging
import os

import httpx
from openai import AzureOpenAI, BadRequestError, RateLimitError

URL = os.environ["MOCK_URL"]
KEY = "sk-ratelab-test"

# What the SDK logs when it retries: "Retrying request in X seconds (retry
# N of M)" (_base_client.py, _sleep_for_retry).
retries = []


class Capture(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith("Retrying request in "):
            retries.append(float(msg.split()[3]))


log = logging.getLogger("openai")
log.setLevel(logging.INFO)
log.addHandler(Capture())

# The answers the SDK saw, for the headers of the 429.
seen = []
http_client = httpx.Client(event_hooks={"response": [lambda r: seen.append((r.status_code, dict(r.headers), str(r.url)))]})

client = AzureOpenAI(azure_endpoint=URL, api_key=KEY, api_version="2024-10-21", http_client=http_client)
msgs = [{"role": "user", "content": "Hello"}]

# plain: the model names the deployment; the answer is the deployment's model.
c = client.chat.completions.create(model="chat-prod", messages=msgs)
assert c.model == "gpt-4o" and c.choices[0].message.content, c
assert seen[-1][2] == URL + "/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21", seen[-1][2]
extra = c.model_extra
assert extra["prompt_filter_results"][0]["prompt_index"] == 0, extra
assert c.choices[0].model_extra["content_filter_results"]["hate"]["severity"] == "safe"
print("ok plain", c.usage.completion_tokens)

# streamed: Azure's first chunk has no choices, only prompt_filter_results.
chunks = list(client.chat.completions.create(model="mini", messages=msgs, stream=True, stream_options={"include_usage": True}))
assert chunks[0].choices == [] and chunks[0].model_extra.get("prompt_filter_results"), chunks[0]
text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
assert text and chunks[-1].usage.completion_tokens == 12, (text, chunks[-1])
print("ok stream", len(chunks))

# tool call.
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}}]
c = client.chat.completions.create(model="mini", messages=msgs, tools=tools, tool_choice="required")
call = c.choices[0].message.tool_calls[0]
args = json.loads(call.function.arguments)
assert c.choices[0].finish_reason == "tool_calls" and call.function.name == "get_weather" and isinstance(args["city"], str), c
print("ok tools", call.function.name)

# structured output.
schema = {"type": "object", "properties": {"answer": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["answer", "n"], "additionalProperties": False}
c = client.chat.completions.create(model="mini", messages=msgs, response_format={
    "type": "json_schema", "json_schema": {"name": "out", "schema": schema, "strict": True}})
doc = json.loads(c.choices[0].message.content)
assert isinstance(doc["answer"], str) and isinstance(doc["n"], int), doc
print("ok structured", sorted(doc))

# 429: a second request at once to limited is throttled; the SDK waits
# retry-after-ms (read before retry-after, _base_client.py) and retries.
seen.clear()
client.chat.completions.create(model="limited", messages=msgs)
client.chat.completions.create(model="limited", messages=msgs)
statuses = [s for s, _, _ in seen]
assert statuses == [200, 429, 200], statuses
h = seen[1][1]
ms = int(h["retry-after-ms"])
assert 0 < ms <= 1001 and h["retry-after"] == "1" and h["x-ratelimit-remaining-requests"] == "0", h
assert retries == [ms / 1000], (retries, ms)
print("ok 429 retried after", ms, "ms")

# Without retries the 429 is a RateLimitError carrying Azure's body.
try:
    client.with_options(max_retries=0).chat.completions.create(model="limited", messages=msgs)
    raise AssertionError("no 429")
except RateLimitError as e:
    assert e.body["code"] == "429" and "have exceeded call rate limit" in e.body["message"], e.body
    print("ok 429 error", e.body["code"])

# The content filter's 400 (MOCK_FILTER_URL refuses every prompt):
# BadRequestError, not retried.
filtered = AzureOpenAI(azure_endpoint=os.environ["MOCK_FILTER_URL"], api_key=KEY, api_version="2024-10-21", http_client=http_client)
seen.clear()
try:
    filtered.chat.completions.create(model="mini", messages=msgs)
    raise AssertionError("no 400")
except BadRequestError as e:
    assert e.code == "content_filter" and e.body["innererror"]["code"] == "ResponsibleAIPolicyViolation", e.body
    assert [s for s, _, _ in seen] == [400], seen
    print("ok content_filter", e.code)
