#!/usr/bin/env python3
"""Extracts the ```cpp blocks of markdown files into one C++ translation unit (see README.md here).

    extract.py --root SOURCE_DIR --preludes DIR --output FILE.cpp FILE.md...

Each block becomes `namespace snippet_<file>_<n> { ... }` (n counts the file's ```cpp blocks from
1), with `#line` directives so that a compiler error names the markdown file and line. `#include`
lines (of blocks and preludes) are hoisted to the top of the unit. The comment on the last
non-blank line before a block's fence decides how it is compiled:

    (none)                          the block as written, at namespace scope
    <!-- snippet: prelude=NAME -->  the block pasted into DIR/NAME.hpp at its `// @snippet` line
    <!-- snippet: skip REASON -->   not compiled (REASON is required)

Exits with status 1, naming the file and line, on a malformed comment, an unknown prelude or an
unterminated block. The output is rewritten only when its text changes.
"""

import argparse
import os
import re
import sys

FENCE_OPEN = "```cpp"
FENCE_CLOSE = "```"
MARKER = "// @snippet"
DIRECTIVE = re.compile(r"^<!--\s*snippet\s*:(.*?)-->$")
INCLUDE = re.compile(r"^\s*#\s*include\b")


class snippet_error(Exception):
    pass


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def parse_directive(line, where):
    """None (no directive), ("skip", reason) or ("prelude", name)."""
    text = line.strip()
    if not text.startswith("<!--") or "snippet" not in text.split("-->")[0]:
        return None
    m = DIRECTIVE.match(text)
    if not m:
        raise snippet_error(f"{where}: malformed snippet comment (want <!-- snippet: prelude=NAME --> "
                            f"or <!-- snippet: skip REASON -->): {text}")
    body = m.group(1).strip()
    if body == "skip" or body.startswith("skip "):
        reason = body[4:].strip()
        if not reason:
            raise snippet_error(f"{where}: <!-- snippet: skip --> needs a reason")
        return ("skip", reason)
    p = re.fullmatch(r"prelude\s*=\s*([A-Za-z0-9_]+)", body)
    if p:
        return ("prelude", p.group(1))
    raise snippet_error(f"{where}: unknown snippet comment '{body}' (want prelude=NAME or skip REASON)")


def blocks_of(path, rel):
    """Yields (index, first_line_number, lines, directive) for each ```cpp block of a file."""
    lines = read_lines(path)
    i, n = 0, 0
    while i < len(lines):
        if lines[i].strip() == FENCE_OPEN:
            n += 1
            start = i + 1
            end = start
            while end < len(lines) and lines[end].strip() != FENCE_CLOSE:
                end += 1
            if end == len(lines):
                raise snippet_error(f"{rel}:{i + 1}: ```cpp block without a closing fence")
            prev = i - 1
            while prev >= 0 and not lines[prev].strip():
                prev -= 1
            directive = parse_directive(lines[prev], f"{rel}:{prev + 1}") if prev >= 0 else None
            yield n, start + 1, lines[start:end], directive
            i = end
        i += 1


class prelude:
    def __init__(self, path, rel):
        lines = read_lines(path)
        marks = [k for k, l in enumerate(lines) if l.strip() == MARKER]
        if len(marks) != 1:
            raise snippet_error(f"{rel}: a prelude needs exactly one '{MARKER}' line, found {len(marks)}")
        self.rel = rel
        self.lines = lines
        self.mark = marks[0]


def split_includes(lines, first_line, rel, hoisted):
    """Moves the #include lines into `hoisted` (with their origin); blanks them in the result."""
    out = []
    for k, line in enumerate(lines):
        if INCLUDE.match(line):
            hoisted.append((rel, first_line + k, line.strip()))
            out.append("")
        else:
            out.append(line)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="source directory: paths in #line are relative to it")
    ap.add_argument("--preludes", required=True, help="directory of the NAME.hpp preludes")
    ap.add_argument("--output", required=True)
    ap.add_argument("markdown", nargs="+")
    args = ap.parse_args()

    def rel_of(path):
        return os.path.relpath(os.path.abspath(path), os.path.abspath(args.root))

    preludes = {}
    hoisted = []      # (file, line, "#include ...")
    body = []         # the namespaces, in order
    compiled, skipped = 0, []
    try:
        for md in args.markdown:
            rel = rel_of(md)
            stem = re.sub(r"[^A-Za-z0-9]", "_", os.path.splitext(os.path.basename(md))[0])
            for n, first, lines, directive in blocks_of(md, rel):
                where = f"{rel}:{first - 1}"
                if directive and directive[0] == "skip":
                    skipped.append(f"{where} ({directive[1]})")
                    continue
                block = split_includes(lines, first, rel, hoisted)
                body.append(f"namespace snippet_{stem}_{n} {{")
                if directive:
                    name = directive[1]
                    if name not in preludes:
                        path = os.path.join(args.preludes, name + ".hpp")
                        if not os.path.isfile(path):
                            raise snippet_error(f"{where}: no prelude '{name}' ({rel_of(path)} does not exist)")
                        preludes[name] = prelude(path, rel_of(path))
                    p = preludes[name]
                    before = split_includes(p.lines[:p.mark], 1, p.rel, hoisted)
                    after = p.lines[p.mark + 1:]
                    body.append(f'#line 1 "{p.rel}"')
                    body.extend(before)
                    body.append(f'#line {first} "{rel}"')
                    body.extend(block)
                    body.append(f'#line {p.mark + 2} "{p.rel}"')
                    body.extend(after)
                else:
                    body.append(f'#line {first} "{rel}"')
                    body.extend(block)
                body.append(f"}} // namespace snippet_{stem}_{n}")
                compiled += 1
    except (snippet_error, OSError) as e:
        print(f"extract.py: {e}", file=sys.stderr)
        return 1

    out = ["// Generated by tests/snippets/extract.py from the ```cpp blocks of the markdown files; do not edit.",
           f"// {compiled} blocks compiled, {len(skipped)} skipped:"]
    out += [f"//   {s}" for s in skipped]
    seen = set()
    for rel, line, include in hoisted:
        key = re.sub(r"\s+", "", include)
        if key in seen:
            continue
        seen.add(key)
        out.append(f'#line {line} "{rel}"')
        out.append(include)
    out += body
    text = "\n".join(out) + "\n"

    try:
        with open(args.output, encoding="utf-8") as f:
            if f.read() == text:
                return 0
    except OSError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
