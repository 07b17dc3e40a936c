"""pytest-mockllm: ratelab's mockllm as a pytest fixture.

The ``mockllm`` fixture runs one mockllm process per test session (per
pytest-xdist worker), resets its counters and settings before every test, and
exposes its server-side counts. See README.md.
"""

from ._server import (
    AdminError,
    BinaryNotFound,
    MockLLM,
    StartError,
    Stats,
    find_binary,
)

__all__ = ["AdminError", "BinaryNotFound", "MockLLM", "StartError", "Stats", "find_binary"]
