"""bounded-fanout-guide.txt, step 2: the anthropic SDK's call in asyncio.Semaphore(N).

The guide's own code, as written (classify() of step 2, fanned out with
gather as in step 1). Changed from the guide, and why:
  - N is argv[1] (the guide's rows: 50, 20 and 10) instead of the literal 20;
  - the tickets are read from RATELAB_ITEMS_FILE (one JSON object a line,
    "prompt" the ticket); the base URL and key come from ANTHROPIC_BASE_URL /
    ANTHROPIC_API_KEY, which the SDK reads from the environment by itself;
  - gather(..., return_exceptions=True) and a main() that counts, so a run
    with failures (Semaphore(50)) reports them as the guide does.
The SDK's default retries (2) are kept, as in the guide.
Prints "completed C of N"; exits 1 if any call failed.
"""

import asyncio
import json
import os
import sys

import anthropic

client = anthropic.AsyncAnthropic()
sem = asyncio.Semaphore(int(sys.argv[1]) if len(sys.argv) > 1 else 20)


async def classify(ticket: str) -> str:
    async with sem:
        msg = await client.messages.create(
            model="claude-haiku-4-5-20251001", max_tokens=100,
            messages=[{"role": "user", "content": f"Classify: {ticket}"}],
        )
    return msg.content[0].text


async def classify_all(tickets: list[str]) -> list[str]:
    return await asyncio.gather(*(classify(t) for t in tickets), return_exceptions=True)


def main() -> int:
    with open(os.environ["RATELAB_ITEMS_FILE"]) as f:
        tickets = [json.loads(line)["prompt"] for line in f if line.strip()]
    results = asyncio.run(classify_all(tickets))
    failed = sum(isinstance(r, BaseException) for r in results)
    print(f"completed {len(tickets) - failed} of {len(tickets)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
