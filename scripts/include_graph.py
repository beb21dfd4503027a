#!/usr/bin/env python3
"""Prints the project's include graph by CMake target and fails on an
include that no target dependency allows.

    scripts/include_graph.py [BUILD_DIR]      (default: build)

Targets, their sources and their dependencies come from CMake's file API
(codemodel-v2) of a configured build directory; the query is written and
the directory re-configured here. A header belongs to the target that lists
it, else to the target compiling its same-named .cc/.cu, else to the target
with most sources in its folder or the nearest folder above. Every
`#include "path"` of a project file must name a file of its own target or of
a target its target depends on, directly or through others. Prints
`from -> to: count` for every pair of distinct targets, then each include
that breaks the rule, and a cycle among targets if there is one; exits 1
on either.
"""
import collections
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIPPED_DIRS = {".git", ".venv", "node_modules", "corpus"}
SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Executables and plugins sit above every library: their sources own nothing
# a library may include.
LIBRARY_KINDS = ("STATIC_LIBRARY", "SHARED_LIBRARY", "OBJECT_LIBRARY", "INTERFACE_LIBRARY")


def codemodel(build_dir):
    query = os.path.join(build_dir, ".cmake", "api", "v1", "query", "codemodel-v2")
    os.makedirs(os.path.dirname(query), exist_ok=True)
    open(query, "a").close()
    subprocess.run(["cmake", build_dir], check=True, stdout=subprocess.DEVNULL)
    reply = os.path.join(build_dir, ".cmake", "api", "v1", "reply")
    index = sorted(f for f in os.listdir(reply) if f.startswith("index-"))[-1]
    with open(os.path.join(reply, index)) as f:
        model_file = json.load(f)["reply"]["codemodel-v2"]["jsonFile"]
    with open(os.path.join(reply, model_file)) as f:
        model = json.load(f)
    targets = {}
    for ref in model["configurations"][0]["targets"]:
        with open(os.path.join(reply, ref["jsonFile"])) as f:
            t = json.load(f)
        targets[t["id"]] = t
    return targets


def project_files():
    for folder, dirs, files in os.walk(ROOT):
        rel_folder = os.path.relpath(folder, ROOT)
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("build")]
        for name in files:
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.normpath(os.path.join(rel_folder, name))


def ownership(targets):
    """path -> the targets listing it as a source. A file compiled into
    several targets (a test helper in two test binaries, the CUDA sources
    in the HIP library) belongs to each; where a library lists it, only
    libraries own it."""
    owner = collections.defaultdict(set)
    library = collections.defaultdict(bool)
    for t in targets.values():
        is_library = t["type"] in LIBRARY_KINDS
        for s in t.get("sources", []):
            path = s["path"]
            if os.path.isabs(path) or path.startswith(".."):
                continue  # generated or outside the tree
            path = os.path.normpath(path)
            if is_library and not library[path]:
                owner[path] = set()
                library[path] = True
            if is_library or not library[path]:
                owner[path].add(t["name"])
    return owner


def owner_of(path, owner):
    """The targets a file belongs to: those listing it, else those
    compiling its same-named .cc/.cu, else the commonest in its folder."""
    if path in owner:
        return frozenset(owner[path])
    stem = os.path.splitext(path)[0]
    for suffix in (".cc", ".cu", ".cpp"):
        if stem + suffix in owner:
            return frozenset(owner[stem + suffix])
    folder = os.path.dirname(path)
    while folder:
        counts = collections.Counter(t for p, ts in owner.items() if os.path.dirname(p) == folder for t in ts)
        if counts:
            return frozenset([counts.most_common(1)[0][0]])
        folder = os.path.dirname(folder)
    return None


def closure(targets):
    names = {t["id"]: t["name"] for t in targets.values()}
    direct = {t["name"]: {names[d["id"]] for d in t.get("dependencies", []) if d["id"] in names} for t in targets.values()}
    reach = {}
    for name in direct:
        seen, todo = set(), list(direct[name])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(direct.get(n, ()))
        reach[name] = seen
    return direct, reach


def resolve(including, included, files):
    for candidate in (os.path.normpath(os.path.join(os.path.dirname(including), included)), os.path.normpath(included)):
        if candidate in files:
            return candidate
    return None


def find_cycle(edges):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def main():
    build_dir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    targets = codemodel(build_dir)
    owner = ownership(targets)
    direct, reach = closure(targets)
    files = set(project_files())
    counts = collections.Counter()
    broken = []
    for path in sorted(files):
        source_owners = owner_of(path, owner)
        if source_owners is None:
            continue  # not built in this configuration
        with open(os.path.join(ROOT, path), errors="replace") as f:
            text = f.read()
        for included in INCLUDE.findall(text):
            target = resolve(path, included, files)
            if target is None:
                continue  # generated (protobuf) or a system header in quotes
            target_owners = owner_of(target, owner)
            if target_owners is None or source_owners & target_owners:
                continue
            # Each target that compiles the including file must reach one
            # that owns the included one.
            for source_owner in sorted(source_owners):
                allowed = [t for t in target_owners if t in reach.get(source_owner, set())]
                counts[(source_owner, min(allowed or target_owners))] += 1
                if not allowed:
                    names = ", ".join(sorted(target_owners))
                    broken.append(f"{path} ({source_owner}) includes {target} ({names})")
    for (a, b), n in sorted(counts.items()):
        print(f"{a} -> {b}: {n}")
    status = 0
    if broken:
        print(f"\n{len(broken)} include(s) that no target dependency allows:")
        for line in broken:
            print("  " + line)
        status = 1
    edges = collections.defaultdict(set)
    for a, b in counts:
        edges[a].add(b)
    for a, deps in direct.items():
        edges[a].update(deps)
    cycle = find_cycle(edges)
    if cycle:
        print("\na cycle among targets: " + " -> ".join(cycle))
        status = 1
    if status == 0:
        print(f"\ninclude graph: {sum(counts.values())} includes across {len(counts)} target pairs, every one allowed; no cycle")
    return status


if __name__ == "__main__":
    sys.exit(main())
