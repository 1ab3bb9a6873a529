#!/usr/bin/env python3
"""check_structure.py — the shape rules of the sources: no file over 600 lines and no function
over 80 lines in include/, src/ and python/, and no import cycle among the modules of the
Python package (python/gpuplan), counting imports inside functions; and docs/architecture.md
names every header under include/gpuplan.

C++ functions are found by brace matching (strings, characters and comments skipped): a
body opened after ')' (and qualifiers), outside any other function, is one function; its
lambdas count as part of it. Python functions by indentation (ast end_lineno).
Usage: check_structure.py [ROOT]   exit 1 and one line per offender when a rule is broken.
"""
import ast
import pathlib
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
CPP_SUFFIXES = {".hpp", ".cpp", ".h"}
SIGNATURE_END = re.compile(r"\)\s*(const|noexcept|override|final|mutable|constexpr|&|&&|->\s*[\w:<>,\s*&]+|\s)*$")
CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\(")


def strip_cpp(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 separators
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else "")); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def cpp_functions(text):
    """(name, first line, line count) of each outermost function body."""
    s = strip_cpp(text)
    stack, found, last_stmt = [], [], 0
    for i, c in enumerate(s):
        if c == "{":
            head = s[last_stmt:i]
            is_fn = (not any(e[0] for e in stack) and SIGNATURE_END.search(head) and not CONTROL.search(head[-200:])
                     and not re.search(r"\]\s*\([^()]*\)[^{]*$", head))
            name = ""
            if is_fn:
                m = re.search(r"([~\w:<>]+)\s*\([^;]*$", head)
                name = m.group(1) if m else "?"
            stack.append((is_fn, i, name))
            last_stmt = i + 1
        elif c == "}":
            if stack:
                is_fn, start, name = stack.pop()
                if is_fn:
                    a, b = s.count("\n", 0, start) + 1, s.count("\n", 0, i) + 1
                    found.append((name, a, b - a + 1))
            last_stmt = i + 1
        elif c == ";":
            last_stmt = i + 1
    return found


def py_functions(text):
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node.lineno, node.end_lineno - node.lineno + 1))
    return out


def import_cycles(package):
    """Cycles among the package's modules (relative imports anywhere in a module, except
    under `if TYPE_CHECKING:`), each as a sorted list of module names."""
    mods = {p.stem for p in package.glob("*.py")}
    edges = {}
    for p in sorted(package.glob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        typing_only = {id(n) for blk in tree.body if isinstance(blk, ast.If) and "TYPE_CHECKING" in ast.unparse(blk.test)
                       for n in ast.walk(blk)}
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and id(node) not in typing_only:
                if node.level == 1:
                    names = [node.module] if node.module else [a.name for a in node.names]
                elif node.module and node.module.startswith("gpuplan."):
                    names = [node.module[len("gpuplan."):]]
                else:
                    continue
                out |= {n.split(".")[0] for n in names if n.split(".")[0] in mods and n.split(".")[0] != p.stem}
        edges[p.stem] = out
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return cycles


def offenders(root):
    root = pathlib.Path(root)
    for top in ("include", "src", "python"):
        for f in sorted((root / top).rglob("*")):
            if not f.is_file() or "data" in f.relative_to(root).parts:
                continue
            if f.suffix not in CPP_SUFFIXES | {".py"}:
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            rel = f.relative_to(root)
            lines = text.count("\n")
            if lines > MAX_FILE_LINES:
                yield f"{rel}: {lines} lines (limit {MAX_FILE_LINES})"
            fns = py_functions(text) if f.suffix == ".py" else cpp_functions(text)
            for name, line, count in fns:
                if count > MAX_FUNCTION_LINES:
                    yield f"{rel}:{line}: function {name} is {count} lines (limit {MAX_FUNCTION_LINES})"
    arch = root / "docs" / "architecture.md"
    named = arch.read_text(encoding="utf-8") if arch.exists() else ""
    for h in sorted((root / "include" / "gpuplan").rglob("*.hpp")):
        rel = h.relative_to(root / "include" / "gpuplan").as_posix()
        if f"`{rel}`" not in named and f"`{h.name}`" not in named and f"{rel}" not in named:
            yield f"docs/architecture.md: does not name include/gpuplan/{rel}"
    for cycle in import_cycles(root / "python" / "gpuplan"):
        yield "python/gpuplan: import cycle " + " <-> ".join(cycle)


if __name__ == "__main__":
    bad = list(offenders(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1]))
    print("\n".join(bad) if bad else "structure: every file and function within the limits, no import cycle")
    sys.exit(1 if bad else 0)
