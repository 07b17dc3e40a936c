#!/usr/bin/env python3
"""The guide's fan-outs (bounded-fanout-guide.txt), standard library only.

Reads the items loadgen hands a command row (RATELAB_ITEMS_FILE, one JSON
object a line: id, prompt or messages, system, max_tokens) and sends each as
a Messages API call to ANTHROPIC_BASE_URL with ANTHROPIC_API_KEY, retrying
as the official SDKs do: up to --max-retries times on 408, 409, 429 and
5xx, waiting the server's retry-after (or 0.5 s doubling, with jitter).

  --concurrency 0   unbounded: every call at once (asyncio.gather's shape)
  --concurrency N   at most N calls in flight (asyncio.Semaphore(N)'s shape)

Threads stand in for asyncio tasks: the standard library has no async HTTP
client, and what the server sees (how many requests at once, when retries
come) is the same. Prints "completed C of N" and exits 1 if any call failed.
"""

import argparse
import json
import os
import random
import sys
import threading
import time
import urllib.error
import urllib.request

RETRYABLE = {408, 409, 429}


def retry_delay(headers, retries_taken):
    """The SDKs' rule: retry-after-ms, then retry-after in seconds, else
    0.5 s doubling to 8 s, less up to 25 % jitter."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name) if headers else None
        if value:
            try:
                delay = float(value) * scale
            except ValueError:
                continue
            if 0 < delay <= 60:
                return delay
    delay = min(0.5 * 2 ** retries_taken, 8.0)
    return delay * (1 - 0.25 * random.random())


def create(base, key, model, item, max_retries):
    """One logical call: its attempts, as an SDK's messages.create makes them."""
    messages = item.get("messages") or [{"role": "user", "content": item["prompt"]}]
    body = {"model": model, "max_tokens": item.get("max_tokens") or 100, "messages": messages}
    if item.get("system"):
        body["system"] = item["system"]
    data = json.dumps(body).encode()
    for attempt in range(max_retries + 1):
        req = urllib.request.Request(
            base + "/v1/messages",
            data=data,
            method="POST",
            headers={
                "content-type": "application/json",
                "x-api-key": key,
                "anthropic-version": "2023-06-01",
                "x-stainless-retry-count": str(attempt),
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=600) as resp:
                return json.load(resp)["content"][0]["text"]
        except urllib.error.HTTPError as exc:
            exc.read()
            retryable = exc.code in RETRYABLE or exc.code >= 500
            if exc.headers.get("x-should-retry") == "false":
                retryable = False
            if not retryable or attempt == max_retries:
                raise
            time.sleep(retry_delay(exc.headers, attempt))
        except (urllib.error.URLError, ConnectionError):
            if attempt == max_retries:
                raise
            time.sleep(retry_delay(None, attempt))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--concurrency", type=int, default=0, help="0: unbounded")
    p.add_argument("--max-retries", type=int, default=2)
    args = p.parse_args()

    base = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    model = os.environ.get("RATELAB_MODEL", "claude-haiku-4-5")
    with open(os.environ["RATELAB_ITEMS_FILE"]) as f:
        items = [json.loads(line) for line in f if line.strip()]

    sem = threading.Semaphore(args.concurrency) if args.concurrency > 0 else None
    results = [None] * len(items)

    def one(i, item):
        try:
            if sem:
                with sem:
                    results[i] = create(base, key, model, item, args.max_retries)
            else:
                results[i] = create(base, key, model, item, args.max_retries)
        except Exception as exc:  # recorded per item, as the guide's step 3 does
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i, it)) for i, it in enumerate(items)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = sum(isinstance(r, Exception) for r in results)
    print(f"completed {len(items) - failed} of {len(items)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
