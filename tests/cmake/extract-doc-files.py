#!/usr/bin/env python3
"""Writes the files a markdown page spells out into a folder (used by the first_project test).

    extract-doc-files.py PAGE.md OUTPUT_DIR NAME...

A file is a fenced block preceded by a line `<!-- file: NAME -->` (blank lines may sit between
the two). Every NAME given must appear exactly once; the block's text (without its fences) is
written to OUTPUT_DIR/NAME, and only rewritten when it changed, so a rebuild stays incremental.
Exits with status 1 and a message naming the page and line on a missing, repeated or unclosed
file block.
"""

import os
import re
import sys

MARK = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->$")


def extract(page):
    lines = open(page, encoding="utf-8").read().split("\n")
    files = {}
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if not m:
            i += 1
            continue
        name, mark_line = m.group(1), i + 1
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i == len(lines) or not lines[i].startswith("```"):
            sys.exit(f"{page}:{mark_line}: <!-- file: {name} --> is not followed by a fenced block")
        fence = re.match(r"^(`{3,})", lines[i]).group(1)
        start = i + 1
        end = start
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            sys.exit(f"{page}:{i + 1}: the block of {name} has no closing fence")
        if name in files:
            sys.exit(f"{page}:{mark_line}: {name} is spelled out twice")
        files[name] = "\n".join(lines[start:end]) + "\n"
        i = end + 1
    return files


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    page, out_dir, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    files = extract(page)
    missing = [n for n in names if n not in files]
    if missing:
        sys.exit(f"{page}: no <!-- file: NAME --> block for {', '.join(missing)}")
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        path = os.path.join(out_dir, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != files[name]:
            with open(path, "w", encoding="utf-8") as f:
                f.write(files[name])
        print(f"extract-doc-files: {page} -> {path} ({files[name].count(chr(10))} lines)")


if __name__ == "__main__":
    main()
