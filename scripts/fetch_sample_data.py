"""Fetch the sample data (vtest.avi, messi5.jpg) into ``data/``.

Both files come from Debian's ``opencv-doc`` package (examples/data/). Order of
preference: already present and verified; a local copy (``$LOOKOUT_DATA_DIR``
or ``../shared/data``); ``apt-get download opencv-doc`` (no root needed where
apt's package lists exist; as root it runs ``apt-get update`` first if needed),
extracted with Python's own ar/tar/xz readers so ``dpkg`` is not required.
Every file is checked against a pinned sha256.

    python scripts/fetch_sample_data.py [--dest data] [--closeups]

``--closeups`` also fetches basketball1.png and basketball2.png, the close-up photos
``scripts/bench/detector.py`` checks the int8 detector on.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = {
    "vtest.avi": "45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf",
    "messi5.jpg": "1d570e49654e84c7a943918537bd9e5e1ef82920152e147c834006e235be97c9",
}
# The close-ups of scripts/bench/detector.py (two players each; never calibrated on):
# only with --closeups, from the same package.
CLOSEUPS = {
    "basketball1.png": "ba06f6701f7260998b430c39b6557f775497e6ce7b1a74f0b7ea6af371bf54a6",
    "basketball2.png": "b3047772e0dc6c9d83c26f64894ca1a897f799f855c5574ac24b2ef934c2978e",
}
KNOWN = FILES | CLOSEUPS
MEMBER_DIR = "usr/share/doc/opencv-doc/examples/data/"


class FetchError(Exception):
    pass


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(path: Path, name: str) -> bool:
    return path.is_file() and sha256(path) == KNOWN[name]


def find_data(name: str, explicit: Path | None = None) -> Path | None:
    """Where a sample file already is: ``explicit``, ``$LOOKOUT_DATA_DIR``, ``data/``,
    ``../shared/data`` (the first that has it), or None (for the scripts that read it)."""
    candidates = [explicit] if explicit else []
    env = os.environ.get("LOOKOUT_DATA_DIR")
    if env:
        candidates.append(Path(env) / name)
    candidates += [ROOT / "data" / name, ROOT.parent / "shared" / "data" / name]
    return next((c for c in candidates if c is not None and c.is_file()), None)


def local_candidates() -> list[Path]:
    dirs = []
    if os.environ.get("LOOKOUT_DATA_DIR"):
        dirs.append(Path(os.environ["LOOKOUT_DATA_DIR"]))
    dirs.append(ROOT.parent / "shared" / "data")
    return dirs


def read_ar_member(deb: bytes, prefix: str) -> tuple[str, bytes]:
    """The first member of an ar archive (a .deb) whose name starts with ``prefix``."""
    if not deb.startswith(b"!<arch>\n"):
        raise FetchError("not a Debian package (ar archive)")
    offset = 8
    while offset + 60 <= len(deb):
        header = deb[offset : offset + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        start = offset + 60
        if name.startswith(prefix):
            return name, deb[start : start + size]
        offset = start + size + (size % 2)
    raise FetchError(f"no {prefix}* member in the package")


def extract_from_deb(deb_path: Path, dest: Path, names: dict[str, str] = FILES) -> None:
    name, payload = read_ar_member(deb_path.read_bytes(), "data.tar")
    if name.endswith(".xz"):
        payload = lzma.decompress(payload)
    elif not name.endswith(".tar"):
        raise FetchError(f"cannot unpack {name} (only .tar and .tar.xz are supported)")
    with tarfile.open(fileobj=io.BytesIO(payload)) as tar:
        for member in tar.getmembers():
            path = member.name.removeprefix("./")
            if path.startswith(MEMBER_DIR) and path[len(MEMBER_DIR) :] in names:
                source = tar.extractfile(member)
                if source is None:
                    continue
                target = dest / path[len(MEMBER_DIR) :]
                with target.open("wb") as out:
                    shutil.copyfileobj(source, out)


def apt_download(workdir: Path) -> Path:
    if shutil.which("apt-get") is None:
        raise FetchError("apt-get is not available; put vtest.avi and messi5.jpg in data/ by hand")

    def download() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["apt-get", "download", "opencv-doc"],
            cwd=workdir,
            capture_output=True,
            text=True,
            check=False,
        )

    result = download()
    if result.returncode != 0 and hasattr(os, "geteuid") and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)
        result = download()
    debs = sorted(workdir.glob("opencv-doc_*.deb"))
    if result.returncode != 0 or not debs:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise FetchError(
            "apt-get download opencv-doc failed: " + (detail[-1] if detail else "no package")
        )
    return debs[-1]


def fetch(dest: Path, names: dict[str, str] = FILES) -> list[str]:
    dest.mkdir(parents=True, exist_ok=True)
    notes = []
    missing = [name for name in names if not verified(dest / name, name)]
    for name in list(missing):
        for directory in local_candidates():
            candidate = directory / name
            if verified(candidate, name):
                shutil.copyfile(candidate, dest / name)
                missing.remove(name)
                notes.append(f"{name}: copied from {directory}")
                break
    if missing:
        with tempfile.TemporaryDirectory() as tmp:
            deb = apt_download(Path(tmp))
            extract_from_deb(deb, dest, names)
            notes.append(f"{', '.join(missing)}: extracted from {deb.name}")
    for name in names:
        if not verified(dest / name, name):
            raise FetchError(f"{dest / name} is missing or its sha256 does not match")
    return notes


def main() -> int:
    parser = argparse.ArgumentParser(description="Fetch Lookout's sample video and image.")
    parser.add_argument("--dest", type=Path, default=ROOT / "data")
    parser.add_argument(
        "--closeups",
        action="store_true",
        help="also basketball1.png and basketball2.png (for scripts/bench/detector.py)",
    )
    args = parser.parse_args()
    try:
        notes = fetch(args.dest, KNOWN if args.closeups else FILES)
    except (FetchError, OSError) as exc:
        print(f"fetch_sample_data: {exc}", file=sys.stderr)
        return 1
    for note in notes:
        print(note)
    print(f"sample data ready in {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
