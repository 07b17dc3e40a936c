#!/usr/bin/env python3
"""The guide's fan-outs (bounded-fanout-guide.txt), standard library only.

Reads the items loadgen hands a command row (RATELAB_ITEMS_FILE, one JSON
object a line: id, prompt or messages, system, max_tokens) and sends each as
a Messages API call to ANTHROPIC_BASE_URL with ANTHROPIC_API_KEY, retrying
as the official SDKs do: up to --max-retries times on 408, 409, 429 and
5xx, waiting the server's retry-after (or 0.5 s doubling, with jitter).

  --concurrency 0   unbounded: asyncio.gather over every item
  --concurrency N   async with asyncio.Semaphore(N) around each call

The standard library has no HTTP client for asyncio, so create() speaks
HTTP/1.1 over asyncio.open_connection, one connection per attempt, as little
as the Messages API needs. Prints "completed C of N" and exits 1 if any
call failed, recording failures per item as the guide's step 3 does.
"""

import argparse
import asyncio
import json
import os
import random
import sys
import urllib.parse

RETRYABLE = {408, 409, 429}


class APIStatusError(Exception):
    def __init__(self, status, headers, body):
        super().__init__(f"{status}: {body[:200]!r}")
        self.status, self.headers = status, headers


def retry_delay(headers, retries_taken):
    """The SDKs' rule: retry-after-ms, then retry-after in seconds, else
    0.5 s doubling to 8 s, less up to 25 % jitter."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = (headers or {}).get(name)
        if value:
            try:
                delay = float(value) * scale
            except ValueError:
                continue
            if 0 < delay <= 60:
                return delay
    delay = min(0.5 * 2 ** retries_taken, 8.0)
    return delay * (1 - 0.25 * random.random())


async def post(url, headers, body):
    """One HTTP/1.1 POST; returns (status, headers, body)."""
    u = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(u.hostname, u.port or 80)
    try:
        head = [f"POST {u.path} HTTP/1.1", f"Host: {u.netloc}", "Connection: close",
                f"Content-Length: {len(body)}"] + [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        status = int((await reader.readline()).split()[1])
        hdrs = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            k, _, v = line.decode().partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = hdrs.get("content-length")
        data = await (reader.readexactly(int(n)) if n else reader.read())
        return status, hdrs, data
    finally:
        writer.close()


async def create(base, key, model, item, max_retries):
    """One logical call: its attempts, as an SDK's messages.create makes them."""
    messages = item.get("messages") or [{"role": "user", "content": item["prompt"]}]
    body = {"model": model, "max_tokens": item.get("max_tokens") or 100, "messages": messages}
    if item.get("system"):
        body["system"] = item["system"]
    data = json.dumps(body).encode()
    for attempt in range(max_retries + 1):
        headers = {"content-type": "application/json", "x-api-key": key,
                   "anthropic-version": "2023-06-01", "x-stainless-retry-count": str(attempt)}
        try:
            status, hdrs, resp = await post(base + "/v1/messages", headers, data)
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            if attempt == max_retries:
                raise
            await asyncio.sleep(retry_delay(None, attempt))
            continue
        if 200 <= status < 300:
            return json.loads(resp)["content"][0]["text"]
        retryable = status in RETRYABLE or status >= 500
        if hdrs.get("x-should-retry") == "false":
            retryable = False
        if not retryable or attempt == max_retries:
            raise APIStatusError(status, hdrs, resp)
        await asyncio.sleep(retry_delay(hdrs, attempt))


async def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--concurrency", type=int, default=0, help="0: unbounded")
    p.add_argument("--max-retries", type=int, default=2)
    args = p.parse_args()

    base = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
    key = os.environ.get("ANTHROPIC_API_KEY", "")
    model = os.environ.get("RATELAB_MODEL", "claude-haiku-4-5")
    with open(os.environ["RATELAB_ITEMS_FILE"]) as f:
        items = [json.loads(line) for line in f if line.strip()]

    sem = asyncio.Semaphore(args.concurrency) if args.concurrency > 0 else None

    async def one(item):
        try:
            if sem:
                async with sem:
                    return await create(base, key, model, item, args.max_retries)
            return await create(base, key, model, item, args.max_retries)
        except (APIStatusError, OSError) as exc:  # per item: the batch goes on
            return exc

    results = await asyncio.gather(*(one(it) for it in items))
    failed = sum(isinstance(r, Exception) for r in results)
    print(f"completed {len(items) - failed} of {len(items)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
