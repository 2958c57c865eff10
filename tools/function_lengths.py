#!/usr/bin/env python3
"""Lists C++ function bodies longer than a limit: the project's measure of "a block waiting to be named".

    tools/function_lengths.py [--over N] [FOLDER ...]      (default: --over 100, folders core app widgets bench)

A function is a brace block at namespace or class level whose header ends with a parameter list (optionally
followed by const, noexcept, override, a trailing return type or a constructor's initialisers); its length runs from
the line its header starts on to its closing brace. Lambdas and blocks inside a function count towards it. Strings,
character literals and comments are skipped, so their braces do not count. Prints one line per function, longest
first, then the count; exits 0.
"""
import argparse
import os
import re
import sys

CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*$")
SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b[^()]*$|extern\s+\"C\"\s*$")


def strip_code(text):
    """The text with comments, strings and character literals blanked (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            m = re.match(r'R"([^(]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def is_function_header(header):
    h = re.sub(r"\s+", " ", header).strip()
    if not h or SCOPE.search(h) or h.endswith("=") or h.startswith("#"):
        return False
    # A constructor's initialiser list: "X::X(a) : m_a(a), m_b{b}" ends with ")" or "}" of an initialiser.
    h = re.sub(r"\)\s*:\s*[^;]*$", ")", h) if re.search(r"\)\s*:(?!:)", h) else h
    h = re.sub(r"\s*(const|noexcept|override|final|mutable|volatile|&|&&)\s*$", "", h)
    h = re.sub(r"\s*(const|noexcept|override|final)\s*$", "", h)
    h = re.sub(r"\s*->\s*[\w:<>,\s\*&]+$", "", h)
    if not h.endswith(")"):
        return False
    if CONTROL.search(h[: h.find("(")]):
        return False
    return "(" in h


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip_code(f.read())
    depth_kinds = []  # per open brace: "scope", "function" or "block"
    header_start = 0  # index where the current header text begins
    results = []
    func_open = None  # (start line, name) of the function being read
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            inside_function = "function" in depth_kinds
            if not inside_function:
                header = text[header_start:i]
                if is_function_header(header):
                    first = header_start + (len(header) - len(header.lstrip()))
                    line = text.count("\n", 0, first) + 1
                    name = re.sub(r"\s+", " ", header.strip())
                    name = name[: name.find("(")].split(" ")[-1] if "(" in name else name
                    func_open = (line, name)
                    depth_kinds.append("function")
                else:
                    depth_kinds.append("scope")
            else:
                depth_kinds.append("block")
            header_start = i + 1
        elif c == "}":
            kind = depth_kinds.pop() if depth_kinds else "scope"
            if kind == "function" and func_open:
                end = text.count("\n", 0, i) + 1
                results.append((end - func_open[0] + 1, func_open[0], func_open[1]))
                func_open = None
            header_start = i + 1
        elif c == ";" and "function" not in depth_kinds:
            header_start = i + 1
        elif c == ":" and "function" not in depth_kinds and text.startswith(("public:", "private:", "protected:"),
                                                                             max(0, i - 9)):
            header_start = i + 1
        i += 1
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--over", type=int, default=100, help="list functions longer than this many lines")
    ap.add_argument("folders", nargs="*", default=["core", "app", "widgets", "bench"])
    args = ap.parse_args()
    rows = []
    for folder in args.folders:
        for root, _, files in os.walk(folder):
            for name in files:
                if name.endswith((".cpp", ".h", ".inc")):
                    path = os.path.join(root, name)
                    rows += [(length, path, line, fn) for length, line, fn in functions(path) if length > args.over]
    rows.sort(reverse=True)
    for length, path, line, fn in rows:
        print(f"{length:5d}  {path}:{line}  {fn}")
    print(f"{len(rows)} functions over {args.over} lines in {' '.join(args.folders)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
