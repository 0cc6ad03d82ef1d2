"""Shared pytest configuration: anyio on asyncio (the production backend), and the TLS
certificates and the fake Gemini Live server the model tests connect the real SDK to."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakelive import FakeLiveServer, TestCerts, make_test_certs


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TestCerts:
    """A throwaway CA and a server certificate for 127.0.0.1 (made once per run)."""
    return make_test_certs(tmp_path_factory.mktemp("fakelive-certs"))


@pytest.fixture
async def srv(certs: TestCerts) -> AsyncIterator[FakeLiveServer]:
    """The fake Gemini Live endpoint over TLS (a module may define its own ``srv``)."""
    async with FakeLiveServer(certs=certs) as server:
        yield server
