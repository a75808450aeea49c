"""``python -m absnb.i18n update|build|check``: see :mod:`absnb.i18n.update`."""

from __future__ import annotations

import sys

from absnb.i18n.update import COMMAND, TRANSLATED, build, problems, update


def main(argv: list[str]) -> int:
    """Run one of ``update``, ``build`` or ``check``; the exit status."""
    if (
        not argv
        or argv[0] not in ("update", "build", "check")
        or (argv[1:] and argv[0] != "update")
    ):
        print("usage: python -m absnb.i18n update [CATALOG...] | build | check", file=sys.stderr)
        return 2
    if argv[0] == "update":
        for path in update(only=tuple(argv[1:])):
            print(f"updated {path}")
        return 0
    if argv == ["build"]:
        for path in build():
            print(f"wrote {path}")
        return 0
    found = [line for lang in TRANSLATED for line in problems(lang)]
    print("\n".join(found) or "every translation is current")
    if found:
        print(f"{len(found)} problems; to fix them: {COMMAND}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
