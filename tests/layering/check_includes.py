#!/usr/bin/env python3
"""The include graph of kvd's own headers: every quoted include of a top-level folder may name
only the folders below it (LAYERS), and no file reaches itself through includes, within a
folder or across folders. Prints the folder graph; exits 1 naming each violation."""
import os
import re
import sys

# Each folder and the folders it may include, directly or not.
LAYERS = {
    "base": set(),
    "kernels": {"base"},
    "engine": {"kernels", "base"},
    "structured": {"engine", "kernels", "base"},
    "cache_store": {"engine", "kernels", "base"},
    "scheduler": {"structured", "cache_store", "engine", "kernels", "base"},
    "documents": {"scheduler", "structured", "cache_store", "engine", "kernels", "base"},
    "bench": {"scheduler", "structured", "cache_store", "engine", "kernels", "base"},
    "server": {"documents", "scheduler", "structured", "cache_store", "engine", "kernels", "base",
               "bench", "proto"},
    "tools": {"engine", "kernels", "base"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root):
    files = {}
    for folder in LAYERS:
        for directory, _, names in os.walk(os.path.join(root, folder)):
            for name in names:
                if name.endswith((".h", ".cc", ".cu", ".cuh")):
                    path = os.path.relpath(os.path.join(directory, name), root)
                    with open(os.path.join(root, path), encoding="utf-8") as source:
                        files[path] = INCLUDE.findall(source.read())
    errors = []
    edges = {}
    for path, includes in sorted(files.items()):
        folder = path.split("/")[0]
        for included in includes:
            target = included.split("/")[0]
            if target not in LAYERS and target != "proto":
                continue  # a generated header or a third-party one
            if target != folder:
                edges.setdefault(folder, set()).add(target)
                if target not in LAYERS[folder]:
                    errors.append(f"{path} includes {included}: {folder} may not include {target}")
    # A cycle among files: depth-first search over the includes that name files of ours.
    state = {}

    def visit(path, stack):
        state[path] = "open"
        stack.append(path)
        for included in files.get(path, []):
            if included not in files:
                continue
            if state.get(included) == "open":
                cycle = stack[stack.index(included):] + [included]
                errors.append("include cycle: " + " -> ".join(cycle))
            elif included not in state:
                visit(included, stack)
        stack.pop()
        state[path] = "done"

    sys.setrecursionlimit(10000)
    for path in sorted(files):
        if path not in state:
            visit(path, [])
    for folder in LAYERS:
        print(f"{folder} -> {', '.join(sorted(edges.get(folder, []))) or '(nothing)'}")
    for error in errors:
        print("error:", error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
