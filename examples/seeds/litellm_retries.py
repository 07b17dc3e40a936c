"""What LiteLLM's num_retries does on a 429: the evidence behind docs/python.md.

Not a seed program: a probe. It serves 429 with retry-after: RETRY_AFTER
(default 1) to every request on a loopback port of its own (standard
library), makes one litellm.acompletion call to it, as Listing 2.9 does,
with num_retries=argv[1] (default 3), and prints each attempt's arrival
(seconds after the call began) and its x-stainless-retry-count header.

Measured with litellm 1.110.2 / openai 3.51.0: num_retries=3 gives 4
attempts 1 s apart with retry counts 0, 1, 2, 3 (the openai SDK's own
retry loop, run with max_retries=num_retries and honouring retry-after);
num_retries=0 gives 1 attempt (LiteLLM turns the SDK's default two retries
off); RETRY_AFTER=5 with num_retries=1 waits 5 s.
"""

import asyncio
import http.server
import json
import os
import sys
import threading
import time

t0 = time.monotonic()
attempts = []


class Always429(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        attempts.append((time.monotonic() - t0, self.headers.get("x-stainless-retry-count")))
        body = json.dumps({"error": {"message": "rate limit", "type": "rate_limit_error"}}).encode()
        self.send_response(429)
        self.send_header("retry-after", os.environ.get("RETRY_AFTER", "1"))
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main() -> int:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Always429)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{srv.server_port}/v1"
    os.environ.setdefault("OPENAI_API_KEY", "test-key")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    num_retries = int(sys.argv[1]) if len(sys.argv) > 1 else 3

    async def one():
        global t0
        t0 = time.monotonic()
        try:
            await litellm.acompletion(model="gpt-5-mini", messages=[{"role": "user", "content": "hi"}],
                                      num_retries=num_retries)
            return "succeeded"
        except Exception as exc:  # the probe reports whatever LiteLLM raises
            return type(exc).__name__

    outcome = asyncio.run(one())
    srv.shutdown()
    print(f"num_retries={num_retries}: {len(attempts)} attempts, then {outcome}")
    for at, count in attempts:
        print(f"  attempt at {at:5.2f} s  x-stainless-retry-count: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
