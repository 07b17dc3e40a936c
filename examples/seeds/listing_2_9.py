"""semaphore-listing.txt, Listing 2.9: LiteLLM acompletion in asyncio.Semaphore(10).

The listing's code, as written. Changed, and why:
  - the prompts are read from RATELAB_ITEMS_FILE (one JSON object a line,
    "prompt") instead of the listing's 100 f"What is {i} + {i}?"; LiteLLM
    reads the base URL and key from OPENAI_BASE_URL / OPENAI_API_KEY itself;
  - the semaphore's size is argv[1] (default 10, the listing's), so a
    scenario can sweep it; the listing's unbounded case is argv[1] = 0
    (no semaphore: LiteLLM's own retries measured alone);
  - the listing's top-level `await` (valid only in a notebook or REPL) runs
    in asyncio.run(main()), and main() counts the results.
Prints "completed C of N"; exits 1 if any call failed.
"""

import asyncio
import contextlib
import json
import os
import sys

from litellm import acompletion

# Limit to 10 concurrent requests
N = int(sys.argv[1]) if len(sys.argv) > 1 else 10
semaphore = asyncio.Semaphore(N) if N > 0 else contextlib.nullcontext()


async def call_llm(prompt: str) -> str:
    """LLM call with rate limiting and automatic retry."""
    async with semaphore:
        response = await acompletion(
            model="gpt-5-mini",
            messages=[{"role": "user", "content": prompt}],
            num_retries=3  # Automatic retry with exponential backoff
        )
    return response.choices[0].message.content


async def main() -> int:
    with open(os.environ["RATELAB_ITEMS_FILE"]) as f:
        prompts = [json.loads(line)["prompt"] for line in f if line.strip()]
    tasks = [call_llm(p) for p in prompts]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    failed = [r for r in results if isinstance(r, BaseException)]
    for r in failed[:3]:
        print(f"failed: {type(r).__name__}: {str(r)[:200]}", file=sys.stderr)
    print(f"completed {len(prompts) - len(failed)} of {len(prompts)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
