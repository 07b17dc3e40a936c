"""The Python SDKs' batch methods against mockllm (mock/batches_python_test.go).

Usage: batches.py BASE_URL KEY. Prints one line "ok NAME" per check and exits
non-zero on the first failure.
"""
import io
import json
import sys
import time

import anthropic
import openai

base, key = sys.argv[1], sys.argv[2]


def check(name, cond, detail=""):
    if not cond:
        print(f"FAIL {name}: {detail}")
        sys.exit(1)
    print(f"ok {name}")


def wait(get, done, what):
    for _ in range(400):
        obj = get()
        if done(obj):
            return obj
        time.sleep(0.05)
    print(f"FAIL {what}: did not end")
    sys.exit(1)


# Anthropic: create, retrieve, results, cancel, list, delete.
a = anthropic.Anthropic(base_url=base, api_key=key, max_retries=0)
reqs = [
    {"custom_id": f"t{i}", "params": {"model": "claude-sonnet-4-5", "max_tokens": 8,
                                       "messages": [{"role": "user", "content": f"ticket {i}"}]}}
    for i in range(5)
]
reqs.append({"custom_id": "bad", "params": {"model": "claude-sonnet-4-5", "max_tokens": 0,
                                            "messages": [{"role": "user", "content": "x"}]}})
b = a.messages.batches.create(requests=reqs)
check("anthropic create", b.id.startswith("msgbatch_") and b.processing_status == "in_progress", b)
b = wait(lambda: a.messages.batches.retrieve(b.id), lambda x: x.processing_status == "ended", "anthropic batch")
check("anthropic counts", b.request_counts.succeeded == 5 and b.request_counts.errored == 1, b.request_counts)
results = {r.custom_id: r.result for r in a.messages.batches.results(b.id)}
check("anthropic results", len(results) == 6 and results["t0"].type == "succeeded"
      and results["t0"].message.usage.output_tokens == 8, results.get("t0"))
check("anthropic errored", results["bad"].type == "errored"
      and results["bad"].error.error.type == "invalid_request_error", results["bad"])
big = a.messages.batches.create(requests=[dict(r, custom_id=f"c{i}") for i, r in enumerate(reqs[:5] * 60)])
c = a.messages.batches.cancel(big.id)
check("anthropic cancel", c.processing_status == "canceling", c.processing_status)
c = wait(lambda: a.messages.batches.retrieve(big.id), lambda x: x.processing_status == "ended", "anthropic cancel")
check("anthropic canceled", c.request_counts.canceled > 0, c.request_counts)
ids = [x.id for x in a.messages.batches.list(limit=1)]
check("anthropic list", ids == [big.id, b.id], ids)
d = a.messages.batches.delete(b.id)
check("anthropic delete", d.type == "message_batch_deleted", d)

# OpenAI: files.create, batches.create, retrieve, files.content, cancel, list.
o = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
lines = "".join(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                            "body": {"model": "gpt-4o-mini", "max_tokens": 6,
                                     "messages": [{"role": "user", "content": f"ticket {i}"}]}}) + "\n"
                for i in range(4))
f = o.files.create(file=("in.jsonl", io.BytesIO(lines.encode())), purpose="batch")
check("openai file", f.purpose == "batch" and f.bytes == len(lines), f)
ob = o.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h",
                      metadata={"job": "py"})
check("openai create", ob.status == "validating" and ob.metadata == {"job": "py"}, ob)
ob = wait(lambda: o.batches.retrieve(ob.id), lambda x: x.status == "completed", "openai batch")
check("openai counts", ob.request_counts.completed == 4 and ob.request_counts.total == 4, ob.request_counts)
out = [json.loads(l) for l in o.files.content(ob.output_file_id).text.splitlines()]
check("openai output", sorted(l["custom_id"] for l in out) == ["r0", "r1", "r2", "r3"]
      and all(l["response"]["body"]["usage"]["completion_tokens"] == 6 for l in out), out[:1])
f2 = o.files.create(file=("big.jsonl", io.BytesIO((lines * 1).replace('"r', '"s').encode() * 1)), purpose="batch")
cb = o.batches.create(input_file_id=f2.id, endpoint="/v1/chat/completions", completion_window="24h")
cb = o.batches.cancel(cb.id)
check("openai cancel", cb.status == "cancelling", cb.status)
cb = wait(lambda: o.batches.retrieve(cb.id), lambda x: x.status == "cancelled", "openai cancel")
check("openai cancelled", cb.status == "cancelled", cb)
ids = [x.id for x in o.batches.list(limit=1)]
check("openai list", ids == [cb.id, ob.id], ids)
