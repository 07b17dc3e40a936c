"""The mockllm process and its admin API, without pytest."""

from __future__ import annotations

import atexit
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

#: The runtime settings the admin API changes (GET and PUT /_admin/NAME).
SETTINGS = ("limits", "latency", "faults", "quota", "limits_by_model")

_LISTENING = re.compile(r"^listening on (http://\S+)\s*$")


class BinaryNotFound(Exception):
    """No mockllm binary where the plugin looked."""


class StartError(Exception):
    """mockllm did not start: it exited, or printed no address in time."""


class AdminError(Exception):
    """The admin API refused a request (mockllm's message says why)."""


def find_binary(explicit: str | None = None, rootdir: str | None = None) -> str:
    """Returns the path of the mockllm binary to run.

    explicit (from --mockllm-bin, $MOCKLLM_BIN or the mockllm_bin ini key)
    must name an executable file, or a command on PATH. Without it: mockllm
    on PATH, then bin/mockllm under rootdir (where `make build` puts it in a
    ratelab checkout). BinaryNotFound says where it looked.
    """
    if explicit:
        found = shutil.which(explicit) if os.sep not in explicit else None
        path = found or os.path.abspath(explicit)
        if not os.path.isfile(path):
            raise BinaryNotFound(f"mockllm binary {explicit!r} (from --mockllm-bin / $MOCKLLM_BIN / mockllm_bin): no such file")
        if not os.access(path, os.X_OK):
            raise BinaryNotFound(f"mockllm binary {path}: not executable (chmod +x it)")
        return path
    looked = ["PATH"]
    found = shutil.which("mockllm")
    if found:
        return found
    if rootdir:
        local = os.path.join(rootdir, "bin", "mockllm")
        looked.append(local)
        if os.path.isfile(local) and os.access(local, os.X_OK):
            return local
    raise BinaryNotFound(
        "mockllm binary not found (looked on " + " and at ".join(looked) + "). "
        "Build it with `make build` (bin/mockllm) or "
        "`go install github.com/ratelab/ratelab/cmd/mockllm@latest`, "
        "then put it on PATH, set MOCKLLM_BIN, or pass --mockllm-bin PATH."
    )


@dataclass(frozen=True)
class Stats:
    """mockllm's server-side counts since the test started (GET /_admin/stats).

    The call fields come from the server's call accounting: attempts grouped
    into logical calls by API key and body (or Idempotency-Key). ``raw`` is
    the whole JSON answer, for what has no field here (latency percentiles,
    the timeline, per-key counts).
    """

    calls: int  #: logical calls
    completed: int  #: calls that got a 2xx
    failed: int  #: calls with no 2xx and no attempt in flight
    attempts: int  #: model requests (first tries and retries)
    throttled: int  #: 429s for rate limits (not quota)
    throttled_by: dict[str, int]  #: 429s by limit: max_concurrent, rpm, itpm, otpm, tpm, ...
    throttled_by_attempt: list[int]  #: [i] = 429s on a call's attempt i+1
    max_attempts: int  #: most attempts one call took
    attempts_per_call: float  #: attempts / completed
    early_retries: int  #: retries sent before the retry-after they were given
    peak_concurrency: int  #: most attempts in flight at once
    in_flight: int  #: attempts in flight now
    admitted: int  #: requests that passed every limit and got a response
    overloaded: int  #: 529s (Anthropic) and 503s (OpenAI)
    server_errors: int  #: other 5xx
    errors: int  #: other failed attempts: 4xx but 429, cut connections, clients gone
    quota_exceeded: int  #: 429s of a spent quota
    input_tokens: int  #: of admitted requests
    output_tokens: int  #: produced
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> "Stats":
        c = raw.get("calls") or {}
        return cls(
            calls=c.get("calls", 0),
            completed=c.get("completed", 0),
            failed=c.get("failed", 0),
            attempts=c.get("attempts", 0),
            throttled=c.get("throttled", 0),
            throttled_by=dict(c.get("throttled_by") or {}),
            throttled_by_attempt=list(c.get("throttled_by_attempt") or []),
            max_attempts=c.get("max_attempts", 0),
            attempts_per_call=c.get("attempts_per_call", 0.0),
            early_retries=c.get("early_retries", 0),
            peak_concurrency=c.get("peak_concurrency", 0),
            in_flight=c.get("in_flight", 0),
            admitted=raw.get("admitted", 0),
            overloaded=c.get("overloaded", 0),
            server_errors=c.get("server_errors", 0),
            errors=c.get("errors", 0),
            quota_exceeded=c.get("quota_exceeded", 0),
            input_tokens=raw.get("input_tokens", 0),
            output_tokens=raw.get("output_tokens", 0),
            raw=dict(raw),
        )

    def throttled_on_attempt(self, n: int) -> int:
        """429s on calls' n-th attempt (1: first tries)."""
        if n < 1:
            raise ValueError(f"attempt numbers start at 1, got {n}")
        return self.throttled_by_attempt[n - 1] if n <= len(self.throttled_by_attempt) else 0


# Every process started and not yet stopped, killed at interpreter exit
# should a session end without its teardown (os._exit aside).
_live: set["MockLLM"] = set()
_live_lock = threading.Lock()


@atexit.register
def _stop_all() -> None:
    with _live_lock:
        servers = list(_live)
    for s in servers:
        s.stop()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    # Linux: SIGTERM the child when the thread that started it dies, so a
    # SIGKILLed pytest leaves no mockllm behind.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class MockLLM:
    """One mockllm process and a client of its admin API.

    ``url`` is the server's root (the Anthropic SDK's base URL);
    ``openai_base_url`` is ``url + "/v1"`` (the OpenAI SDK's).
    """

    def __init__(
        self,
        binary: str,
        *,
        addr: str = "127.0.0.1:0",
        config: str | None = None,
        args: Sequence[str] = (),
        startup_timeout: float = 10.0,
        admin_token: str | None = None,
    ) -> None:
        self.binary = binary
        self.addr = addr
        self.admin_token = admin_token if admin_token is not None else _flag_value(args, "admin-token")
        cmd = [binary, "--addr", addr]
        if config:
            cmd += ["--config", config]
        cmd += list(args)
        self.command = cmd
        self._stderr = tempfile.TemporaryFile(mode="w+b")
        preexec = _die_with_parent if sys.platform == "linux" and threading.current_thread() is threading.main_thread() else None
        try:
            self.process = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                preexec_fn=preexec,
            )
        except OSError as e:
            self._stderr.close()
            raise StartError(f"mockllm: cannot run {binary}: {e}") from e
        with _live_lock:
            _live.add(self)
        try:
            self.url = self._read_address(startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.openai_base_url = self.url + "/v1"
        self._initial = {name: self._request("GET", "/_admin/" + name) for name in SETTINGS}

    def __repr__(self) -> str:
        return f"<MockLLM {getattr(self, 'url', '(starting)')} pid={self.process.pid}>"

    # --- process ---------------------------------------------------------

    def _read_address(self, timeout: float) -> str:
        lines: queue.Queue[bytes] = queue.Queue()
        out = self.process.stdout
        assert out is not None

        def pump() -> None:
            # The first line, then everything else unread, so a full pipe
            # never blocks the server.
            for line in iter(out.readline, b""):
                lines.put(line)
            lines.put(b"")

        threading.Thread(target=pump, name=f"mockllm-stdout-{self.process.pid}", daemon=True).start()
        try:
            first = lines.get(timeout=timeout)
        except queue.Empty:
            raise StartError(
                f"mockllm printed no 'listening on http://HOST:PORT' line within {timeout:g}s "
                f"({' '.join(self.command)}){self._stderr_tail()}"
            ) from None
        m = _LISTENING.match(first.decode(errors="replace"))
        if m:
            return m.group(1)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StartError(f"mockllm's first line is {first!r}, not 'listening on http://HOST:PORT' ({' '.join(self.command)})") from None
        err = self._stderr_text()
        if "address already in use" in err:
            raise StartError(
                f"mockllm could not listen on {self.addr}: the port is taken (address already in use). "
                "Use --mockllm-addr 127.0.0.1:0 (the default) for a free port; a fixed port cannot be shared "
                f"by pytest-xdist workers.{self._stderr_tail()}"
            )
        raise StartError(f"mockllm exited with status {code} before listening ({' '.join(self.command)}){self._stderr_tail()}")

    def _stderr_text(self) -> str:
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            return self._stderr.read().decode(errors="replace")
        except (ValueError, OSError):
            return ""

    def _stderr_tail(self, lines: int = 20) -> str:
        tail = self._stderr_text().strip().splitlines()[-lines:]
        return ("\nmockllm's stderr:\n  " + "\n  ".join(tail)) if tail else ""

    def stop(self, timeout: float = 5.0) -> None:
        """Stops the process (SIGTERM, then SIGKILL after timeout) and
        waits for it. Idempotent."""
        p = self.process
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p.stdout:
            p.stdout.close()
        self._stderr.close()
        with _live_lock:
            _live.discard(self)

    @property
    def pid(self) -> int:
        return self.process.pid

    def env(self) -> dict[str, str]:
        """The variables that point the Anthropic and OpenAI SDKs (and
        LiteLLM) at this server."""
        return {"ANTHROPIC_BASE_URL": self.url, "OPENAI_BASE_URL": self.openai_base_url}

    # --- admin API --------------------------------------------------------

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        if self.process.poll() is not None:
            raise AdminError(f"mockllm (pid {self.process.pid}) has exited with status {self.process.returncode}{self._stderr_tail()}")
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.admin_token:
            req.add_header("Authorization", "Bearer " + self.admin_token)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            raise AdminError(f"{method} {path}: {e.code}: {_error_message(e.read())}") from None

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        """Any admin request, e.g. admin("GET", "/_admin/limits"); returns the
        decoded JSON answer."""
        return self._request(method, path, body)

    def set_limits(self, **limits: Any) -> dict[str, Any]:
        """Changes the per-key limits (the config's limits: keys, e.g.
        max_concurrent=10, rpm=50, retry_after="1s"); keys not given keep
        their value. Returns the limits now in force."""
        return self._request("PUT", "/_admin/limits", limits)

    def set_latency(self, **latency: Any) -> dict[str, Any]:
        """Changes the latency model (ttft="100ms", per_token="5ms", ...)."""
        return self._request("PUT", "/_admin/latency", latency)

    def set_faults(self, **faults: Any) -> dict[str, Any]:
        """Changes the injected faults (error_500=0.1, overloaded=0.2,
        script=[{"attempts": 2, "status": 529}], ...)."""
        return self._request("PUT", "/_admin/faults", faults)

    def set_quota(self, **quota: Any) -> dict[str, Any]:
        """Changes the per-key quota (requests=, input_tokens=, usd=, ...)."""
        return self._request("PUT", "/_admin/quota", quota)

    def set_limits_by_model(self, pools: Mapping[str, Any]) -> dict[str, Any]:
        """Changes the per-model pools ({"claude-sonnet-*": {"rpm": 50}}; a
        pattern set to None is removed)."""
        return self._request("PUT", "/_admin/limits_by_model", dict(pools))

    def limits(self) -> dict[str, Any]:
        return self._request("GET", "/_admin/limits")

    def latency(self) -> dict[str, Any]:
        return self._request("GET", "/_admin/latency")

    def faults(self) -> dict[str, Any]:
        return self._request("GET", "/_admin/faults")

    def quota(self) -> dict[str, Any]:
        return self._request("GET", "/_admin/quota")

    def limits_by_model(self) -> dict[str, Any]:
        return self._request("GET", "/_admin/limits_by_model")

    def stats(self) -> Stats:
        """The server-side counts since the test started (or the last
        reset())."""
        return Stats.from_json(self._request("GET", "/_admin/stats"))

    def reset(self) -> None:
        """Zeroes the counters (POST /_admin/reset); settings stay."""
        self._request("POST", "/_admin/reset")

    def restore(self) -> None:
        """Puts back the settings the server started with and zeroes its
        counters: what the fixture does before every test."""
        for name in SETTINGS:
            want = self._initial[name]
            if name == "limits_by_model":
                want = dict(want or {})
                for pattern in self._request("GET", "/_admin/limits_by_model") or {}:
                    want.setdefault(pattern, None)
            self._request("PUT", "/_admin/" + name, want if want is not None else {})
        self.reset()

    def configure(self, settings: Mapping[str, Any]) -> None:
        """Applies settings shaped like a config file's runtime sections:
        {"limits": {...}, "faults": {...}, ...}."""
        unknown = sorted(set(settings) - set(SETTINGS))
        if unknown:
            raise AdminError(f"unknown mockllm setting(s) {', '.join(unknown)}: the admin API changes {', '.join(SETTINGS)}")
        for name, value in settings.items():
            self._request("PUT", "/_admin/" + name, dict(value))


def _flag_value(args: Iterable[str], name: str) -> str | None:
    args = list(args)
    for i, a in enumerate(args):
        for prefix in ("--" + name, "-" + name):
            if a == prefix and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(prefix + "="):
                return a[len(prefix) + 1 :]
    return None


def _error_message(body: bytes) -> str:
    text = body.decode(errors="replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if isinstance(doc, dict):
        err = doc.get("error")
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])
        if "message" in doc:
            return str(doc["message"])
    return text
