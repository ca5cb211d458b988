"""Print the dependency floors of pyproject.toml as pip constraints, for the CI leg that tests them.

``python .ci/floors.py`` prints ``name==floor`` for every runtime dependency and for the
``embedded`` extra: the lowest versions pyproject.toml allows for our direct dependencies, so a
``pip install -c`` of its output installs exactly them (their own dependencies at the newest
versions that fit). A floor that cannot be installed makes that install fail: raise it in
pyproject.toml. ``python .ci/floors.py --tools NAME...`` prints the test extra's requirements for
the named test tools (those that can be installed beside the floors). Runs on Python >= 3.11
(tomllib); stdlib only, no packaging import.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# name, extras, then the specifier list up to a marker
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9._-]+)\s*(\[[^\]]*\])?\s*([^;]*)(;.*)?$")


def floor(requirement: str) -> str:
    """``name==X`` for a requirement with a ``>=X`` floor (extras kept out: constraints take none)."""
    match = REQUIREMENT.match(requirement)
    if match is None:
        raise SystemExit(f"cannot read the requirement {requirement!r}")
    name, specs = match.group(1), match.group(3)
    lows = [s.strip()[2:].strip() for s in specs.split(",") if s.strip().startswith(">=")]
    if len(lows) != 1:
        raise SystemExit(f"{requirement!r} has no single >= floor to test")
    return f"{name}=={lows[0]}"


def main(argv: list[str]) -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    if argv[:1] == ["--tools"]:
        wanted = set(argv[1:])
        by_name = {REQUIREMENT.match(r).group(1): r for r in extras["test"]}  # type: ignore[union-attr]
        missing = wanted - by_name.keys()
        if missing:
            raise SystemExit(f"not in the test extra: {sorted(missing)}")
        print("\n".join(by_name[n] for n in sorted(wanted)))
        return
    print("\n".join(floor(r) for r in [*project["dependencies"], *extras["embedded"]]))


if __name__ == "__main__":
    main(sys.argv[1:])
