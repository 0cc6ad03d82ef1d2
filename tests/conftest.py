"""Shared pytest configuration: anyio on asyncio (the production backend), the TLS
certificates and the fake Gemini Live server the model tests connect the real SDK to, and
the session's remembered detections (tests/detection_cache.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.detection_cache import DetectionCache, remembered
from tests.fakelive import FakeLiveServer, TestCerts, make_test_certs


def pytest_configure(config: pytest.Config) -> None:
    # How the detector runs on this machine (--backend/--precision auto) is measured once
    # and remembered under XDG_CACHE_HOME: once per session here (it is inherited by every
    # ``lookout`` the tests start), never from, or into, the user's own cache.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="lookout-test-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.get("XDG_CACHE_HOME", ""), ignore_errors=True)


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


@pytest.fixture(scope="session")
def detections_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this session keeps the real detector's answers (made empty once per run)."""
    return tmp_path_factory.mktemp("detections")


@pytest.fixture
def remembered_detections(detections_folder: Path) -> Iterator[DetectionCache]:
    """The real detector, answering a frame it has seen in this session from the folder
    (in this process and in the ``lookout`` processes the test starts)."""
    with remembered(detections_folder) as cache:
        yield cache
