"""bounded-fanout-guide.txt, step 1: unbounded asyncio.gather with the anthropic SDK.

The guide's own code, as written: classify() is its step 2's call without the
semaphore, classify_all() its step 1. Changed from the guide, and why:
  - the tickets are read from RATELAB_ITEMS_FILE (one JSON object a line,
    "prompt" the ticket) instead of the guide's unnamed list; the base URL and
    key come from ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY, which the SDK reads
    from the environment by itself (no code change for those);
  - max_retries is argv[1] (the guide's two rows: 2, the SDK's default, and 10);
  - gather(..., return_exceptions=True) instead of a bare gather, and a main()
    that counts: the guide reports how many of the 200 calls succeeded and
    how many raised RateLimitError, which a bare gather cannot tell (it raises
    the first exception, and asyncio.run then cancels the calls in flight).
Prints "completed C of N"; exits 1 if any call failed.
"""

import asyncio
import json
import os
import sys

import anthropic

client = anthropic.AsyncAnthropic(max_retries=int(sys.argv[1]) if len(sys.argv) > 1 else 2)


async def classify(ticket: str) -> str:
    msg = await client.messages.create(
        model="claude-haiku-4-5-20251001", max_tokens=100,
        messages=[{"role": "user", "content": f"Classify: {ticket}"}],
    )
    return msg.content[0].text


async def classify_all(tickets: list[str]) -> list[str]:
    return await asyncio.gather(*(classify(t) for t in tickets), return_exceptions=True)   # 200 at once


def main() -> int:
    with open(os.environ["RATELAB_ITEMS_FILE"]) as f:
        tickets = [json.loads(line)["prompt"] for line in f if line.strip()]
    results = asyncio.run(classify_all(tickets))
    failed = sum(isinstance(r, BaseException) for r in results)
    print(f"completed {len(tickets) - failed} of {len(tickets)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
