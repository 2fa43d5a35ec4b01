"""An in-tree PEP 517 (and PEP 660) build backend for the outboxd package.

pip builds a package in an isolated environment into which it first installs the backend
the project asks for; a backend from PyPI cannot be had offline. This one needs nothing but
the standard library (``[build-system] requires = []``, ``backend-path = ["_build"]``), so
``pip install ./clients/python`` works without a network. It builds a pure-Python wheel of
``src/outboxd`` with the metadata of ``pyproject.toml``'s ``[project]`` table, an sdist of the
tree, and an editable wheel that puts ``src`` on the path.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "outboxd"
SOURCE = ROOT / "src" / PACKAGE
WHEEL_TAG = "py3-none-any"
# Archive members get one fixed time, so that a build of the same tree is the same bytes.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SDIST_PARTS = ("pyproject.toml", "README.md", "_build", "src", "examples", "tests")


def _project() -> Dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name(project: Dict[str, Any]) -> str:
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _metadata(project: Dict[str, Any]) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
    ]
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    license_text = project.get("license", {}).get("text")
    if license_text:
        lines.append(f"License: {license_text}")
    for classifier in project.get("classifiers", []):
        lines.append(f"Classifier: {classifier}")
    for requirement in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {requirement}")
    readme = project.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        body = (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


def _dist_info_files(project: Dict[str, Any]) -> List[Tuple[str, bytes]]:
    files = [
        ("METADATA", _metadata(project).encode()),
        ("WHEEL", (f"Wheel-Version: 1.0\nGenerator: outboxd_build\nRoot-Is-Purelib: true\n"
                   f"Tag: {WHEEL_TAG}\n").encode()),
        ("top_level.txt", f"{PACKAGE}\n".encode()),
    ]
    scripts = project.get("scripts", {})
    if scripts:
        entries = "".join(f"{name} = {target}\n" for name, target in sorted(scripts.items()))
        files.append(("entry_points.txt", f"[console_scripts]\n{entries}".encode()))
    return files


def _package_files() -> Iterator[Tuple[str, bytes]]:
    for path in sorted(SOURCE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            yield f"{PACKAGE}/{path.relative_to(SOURCE).as_posix()}", path.read_bytes()


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    project = _project()
    dist = _dist_name(project)
    info = f"{dist}.dist-info"
    members = files + [(f"{info}/{name}", data) for name, data in _dist_info_files(project)]
    record = "\n".join([_record_line(name, data) for name, data in members]
                       + [f"{info}/RECORD,,"]) + "\n"
    members.append((f"{info}/RECORD", record.encode()))
    filename = f"{dist}-{WHEEL_TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in members:
            entry = zipfile.ZipInfo(name, FIXED_TIME)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    return filename


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = _project()
    info = f"{_dist_name(project)}.dist-info"
    target = Path(metadata_directory) / info
    target.mkdir(parents=True, exist_ok=True)
    for name, data in _dist_info_files(project):
        (target / name).write_bytes(data)
    return info


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, list(_package_files()))


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    project = _project()
    dist = f"{project['name']}-{project['version']}"
    filename = f"{dist}.tar.gz"

    def add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
        entry = tarfile.TarInfo(f"{dist}/{name}")
        entry.size = len(data)
        entry.mode = 0o644
        archive.addfile(entry, io.BytesIO(data))

    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) \
            as archive:
        for part in SDIST_PARTS:
            path = ROOT / part
            paths = [path] if path.is_file() else sorted(path.rglob("*"))
            for item in paths:
                if item.is_file() and "__pycache__" not in item.parts:
                    add(archive, item.relative_to(ROOT).as_posix(), item.read_bytes())
        add(archive, "PKG-INFO", _metadata(project).encode())
    return filename


# PEP 660 hooks: an editable install is a wheel whose .pth file puts src/ on sys.path.

def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_editable(metadata_directory: str,
                                        config_settings: Optional[Dict[str, Any]] = None) -> str:
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    pth = f"{SOURCE.parent}\n".encode()
    return _write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", pth)])
