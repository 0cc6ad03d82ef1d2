"""`--db` naming something that cannot be a database: one line, exit 2, for run and ask."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import lookout
from tests.datafiles import data_file

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("command", ["run", "ask"])
def test_a_db_that_is_a_directory_or_not_sqlite_is_a_usage_error(
    tmp_path: Path, command: str
) -> None:
    config = tmp_path / "empty.toml"
    config.write_text("")  # not /etc/lookout/lookout.toml
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("hello\n")
    source = ["--source", str(data_file("vtest.avi")), "--model", "local"]
    head = (
        ["run", *source, "--no-http", "--duration", "1"]
        if command == "run"
        else ["ask", "how many?", *source]
    )
    cases = [
        (tmp_path, f"--db {tmp_path}: is a directory, not a database file"),
        (not_sqlite, f"--db {not_sqlite}: not a SQLite database"),
    ]
    for db, said in cases:
        result = lookout(*head, "--db", str(db), "--config", str(config), timeout=60)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip().splitlines() == [f"lookout: {said}"]
