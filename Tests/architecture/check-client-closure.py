#!/usr/bin/env python3
"""The client products build for Apple platforms: checked from the package description.

  Tests/architecture/check-client-closure.py              # check the package
  Tests/architecture/check-client-closure.py --self-test  # first prove it catches each violation

For each client product (`Jetstream`, `JetstreamModel`, `JetstreamClient`), it takes the targets
they depend on, directly or not, from `swift package describe --type json`:

- none may be a system library target (nghttp2, zlib, SQLite, libpq, the Linux I/O shim): an iOS
  app has none of them;
- the only other packages' products allowed are those listed in ALLOWED_PRODUCTS (each was checked
  to build on every Apple platform with no system library); a new one fails the check until it is
  checked and listed;
- in their sources, a Linux-only module (`Glibc`, `Musl`, `FoundationNetworking`) is imported only
  inside `#if canImport(...)` or `#if os(Linux)`;
- the package declares every Apple platform (iOS, macOS, tvOS, watchOS, visionOS).

Prints each violation and exits 1 when there is one.
"""
from __future__ import annotations

import copy
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLIENT_PRODUCTS = ["Jetstream", "JetstreamModel", "JetstreamClient"]
# Checked by hand: pure Swift or bundled C (Yams' libyaml), every Apple platform, no system library.
ALLOWED_PRODUCTS = {"Yams", "HashTreeCollections"}
APPLE_PLATFORMS = {"ios", "macos", "tvos", "watchos", "visionos"}
LINUX_ONLY = re.compile(r"^\s*(@[A-Za-z_]+\s+)*((public|package|internal|fileprivate|private)\s+)?"
                        r"import\s+(Glibc|Musl|FoundationNetworking)\b")
GUARD = re.compile(r"^\s*#if\b.*(canImport\((Glibc|Musl|FoundationNetworking)\)|os\(Linux\))")


def describe() -> dict:
    output = subprocess.run(["swift", "package", "describe", "--type", "json"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output[output.index("{"):])


def closure(package: dict, product: str) -> list[dict]:
    targets = {target["name"]: target for target in package["targets"]}
    roots = next(p["targets"] for p in package["products"] if p["name"] == product)
    seen: dict[str, dict] = {}
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen[name] = targets[name]
        stack += targets[name].get("target_dependencies") or []
    return list(seen.values())


def unguarded_linux_imports(source: pathlib.Path) -> list[str]:
    """`import Glibc` and the like outside an `#if` that names Linux (nesting counted)."""
    found: list[str] = []
    guards: list[bool] = []
    for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#if"):
            guards.append(bool(GUARD.match(line)))
        elif stripped.startswith("#endif") and guards:
            guards.pop()
        elif stripped.startswith("#else") and guards:
            guards[-1] = False
        elif LINUX_ONLY.match(line) and not any(guards):
            found.append(f"{source.relative_to(ROOT) if source.is_relative_to(ROOT) else source}:{number}: "
                         f"{stripped} outside #if canImport(...) / #if os(Linux)")
    return found


def violations(package: dict, source_root: pathlib.Path = ROOT) -> list[str]:
    found: list[str] = []
    declared = {platform["name"] for platform in package.get("platforms", [])}
    for missing in sorted(APPLE_PLATFORMS - declared):
        found.append(f"Package.swift: platforms lacks {missing}: an app on it cannot add the package")
    for product in CLIENT_PRODUCTS:
        for target in closure(package, product):
            if target.get("type") == "system-target":
                found.append(f"{product}: depends on the system library target {target['name']}, "
                             "which Apple platforms do not have")
            for dependency in target.get("product_dependencies") or []:
                if dependency not in ALLOWED_PRODUCTS:
                    found.append(f"{product}: {target['name']} depends on the product {dependency}, not known to "
                                 "build on every Apple platform without a system library (check it, then list it "
                                 "in ALLOWED_PRODUCTS)")
            path = source_root / target["path"]
            for source in sorted(path.rglob("*.swift")) if path.is_dir() else []:
                found += [f"{product}: {line}" for line in unguarded_linux_imports(source)]
    return sorted(set(found))


def self_test(package: dict) -> None:
    """Each kind of violation, made in a copy, must be caught."""
    assert not violations(package), "the self-test needs a clean package"
    broken = copy.deepcopy(package)
    client = next(t for t in broken["targets"] if t["name"] == "JetstreamClient")
    client["target_dependencies"] = (client.get("target_dependencies") or []) + ["CSQLite"]
    assert any("system library target CSQLite" in v for v in violations(broken)), "a system library slipped by"

    broken = copy.deepcopy(package)
    model = next(t for t in broken["targets"] if t["name"] == "JetstreamModel")
    model["product_dependencies"] = (model.get("product_dependencies") or []) + ["NIOCore"]
    assert any("product NIOCore" in v for v in violations(broken)), "an unchecked product slipped by"

    broken = copy.deepcopy(package)
    broken["platforms"] = [p for p in broken["platforms"] if p["name"] != "ios"]
    assert any("lacks ios" in v for v in violations(broken)), "a missing platform slipped by"

    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        broken = copy.deepcopy(package)
        for target in broken["targets"]:
            if target["name"] == "Jetstream":
                folder = scratch / target["path"]
                folder.mkdir(parents=True)
                (folder / "Bad.swift").write_text(
                    "#if canImport(FoundationNetworking)\nimport FoundationNetworking\n#endif\nimport Glibc\n")
        found = violations(broken, source_root=scratch)
        assert any("import Glibc outside" in v for v in found), f"an unguarded import slipped by: {found}"
        assert not any("import FoundationNetworking outside" in v for v in found), "a guarded import was refused"
    print("client closure self-test: a system library, an unchecked product, a missing platform and an "
          "unguarded Linux import are each caught")


def main() -> None:
    package = describe()
    if "--self-test" in sys.argv:
        self_test(package)
    found = violations(package)
    for violation in found:
        print(f"client closure: {violation}")
    targets = sorted({t["name"] for product in CLIENT_PRODUCTS for t in closure(package, product)})
    print(f"client closure: {len(found)} violations; {', '.join(CLIENT_PRODUCTS)} depend on {', '.join(targets)} "
          f"and the products {', '.join(sorted(ALLOWED_PRODUCTS))}")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
