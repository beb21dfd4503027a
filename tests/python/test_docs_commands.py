"""Every command the README and docs/ show still runs: each fenced shell
block is read, and each `tessera SUBCOMMAND` line must name a subcommand the
binary has and only flags that subcommand's --help lists; each `make TARGET`
must be a target of the Makefile; each `scripts/...` or `tests/...` path
must exist. Links between the pages must point at files that exist."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
FENCE = re.compile(r"^```(sh|bash|shell|console)\n(.*?)^```", re.M | re.S)


def shell_lines(page):
    with open(os.path.join(ROOT, page)) as f:
        text = f.read()
    for block in FENCE.finditer(text):
        joined = block.group(2).replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" #")[0].strip()  # a trailing comment explains, it does not run
            if line and not line.startswith("#"):
                yield line


def commands(pattern):
    found = []
    for page in PAGES:
        for line in shell_lines(page):
            for part in re.split(r"&&|\|\||;|\|", line):
                words = part.split()
                for i, w in enumerate(words):
                    if re.fullmatch(pattern, w):
                        found.append((page, words[i + 1:], line))
                        break
    return found


def help_flags(binary, subcommand):
    shown = subprocess.run([binary, subcommand, "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, f"tessera {subcommand} --help failed: {shown.stderr}"
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", shown.stdout))


def test_the_pages_show_tessera_commands():
    assert len(commands(r"([^\s=]*/)?tessera")) >= 10


def test_every_tessera_command_names_a_subcommand_and_flags_it_has(tessera_bin):
    listed = subprocess.run([tessera_bin, "--help"], capture_output=True, text=True, timeout=60).stdout
    subcommands = set(re.findall(r"^  ([a-z][a-z-]+)\s", listed, re.M))
    assert {"serve", "generate", "quantize", "worker"} <= subcommands, listed
    flags_of = {}
    wrong = []
    for page, words, line in commands(r"([^\s=]*/)?tessera"):
        if not words or words[0].startswith("-"):
            continue
        sub = words[0]
        if sub not in subcommands:
            wrong.append(f"{page}: '{line}': no subcommand '{sub}'")
            continue
        if sub not in flags_of:
            flags_of[sub] = help_flags(tessera_bin, sub)
        for w in words[1:]:
            flag = re.match(r"^\[?(--?[A-Za-z][\w-]*)", w)
            if flag and flag.group(1) not in flags_of[sub]:
                wrong.append(f"{page}: '{line}': 'tessera {sub}' has no flag {flag.group(1)}")
    assert not wrong, "\n".join(wrong)


def makefile_targets():
    with open(os.path.join(ROOT, "Makefile")) as f:
        return set(re.findall(r"^([a-z][\w-]*):", f.read(), re.M))


def test_every_make_command_names_a_target():
    targets = makefile_targets()
    wrong = [f"{page}: '{line}'" for page, words, line in commands(r"make")
             if words and not words[0].startswith("-") and "=" not in words[0] and words[0] not in targets]
    assert not wrong, "no such make target:\n" + "\n".join(wrong)


@pytest.mark.parametrize("page", PAGES)
def test_paths_and_links_exist(page):
    with open(os.path.join(ROOT, page)) as f:
        text = f.read()
    missing = []
    for line in shell_lines(page):
        for path in re.findall(r"(?<![\w/.~-])((?:scripts|tests|load_tests|deploy)/[\w./-]+\.(?:sh|py|yaml|yml))", line):
            if not os.path.exists(os.path.join(ROOT, path)):
                missing.append(path)
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        if not os.path.exists(os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target))):
            missing.append(target)
    assert not missing, f"{page} names what does not exist: {missing}"
