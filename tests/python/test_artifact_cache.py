"""The artifact cache: weights quantized at load are stored on the first
start and read back on the next (the same answers, bit for bit); a damaged
entry is made again, never trusted; `tessera cache` lists, verifies,
prunes, exports and imports it, and an archive made by a build with another
kernel ABI is left out."""
import re
import shutil
import subprocess

import pytest

from daemon import Daemon

HEADER = 176  # magic, build ABI, key, payload size, payload SHA-256


def config(model, cache_dir):
    return (f"server:\n  cache_dir: {cache_dir}\n"
            f"models:\n  - name: q\n    path: {model}\n    quantization: {{scheme: a16w4}}\n    kv_cache: {{budget_mb: 16}}\n")


def start(tessera_bin, model, cache_dir):
    d = Daemon(tessera_bin, [], config(model, cache_dir))
    m = re.search(r"model q: (\d+) linears quantized at load, (\d+) read from the artifact cache", d.log_text())
    assert m, d.log_text()
    return d, int(m.group(1)), int(m.group(2))


def answer(d):
    status, text, _ = d.request("POST", "/v1/completions", {"model": "q", "prompt": "The quick brown fox", "max_tokens": 12,
                                                            "temperature": 0, "logprobs": 2})
    assert status == 200, text
    return text[text.index('"choices"'):text.index('"usage"')]


def cache(tessera_bin, *args):
    return subprocess.run([str(tessera_bin), "cache", *map(str, args)], capture_output=True, text=True, timeout=120)


def run_once(tessera_bin, model, cache_dir):
    d, made, read = start(tessera_bin, model, cache_dir)
    try:
        return made, read, answer(d)
    finally:
        assert d.stop() == 0, d.log_text()


@pytest.fixture(scope="module")
def cold_start(tessera_bin, smollm2, tmp_path_factory):
    """One cold start's store, count of linears made and answer: quantizing
    at load is the slow part, so the tests below start from copies of it."""
    store = tmp_path_factory.mktemp("cold") / "cache"
    made, read, cold = run_once(tessera_bin, smollm2, store)
    assert made > 0 and read == 0
    return store, made, cold


def copy_of_cold_store(cold_start, tmp_path):
    store, made, cold = cold_start
    copy = tmp_path / "cache"
    shutil.copytree(store, copy)
    return copy, made, cold


def test_a_warm_start_reads_what_the_cold_one_quantized(tessera_bin, smollm2, cold_start, tmp_path):
    store, made, cold = copy_of_cold_store(cold_start, tmp_path)
    listed = cache(tessera_bin, "ls", "--dir", store)
    assert listed.returncode == 0 and f"{made} entries" in listed.stdout, listed.stdout
    made_again, read_again, warm = run_once(tessera_bin, smollm2, store)
    assert (made_again, read_again) == (0, made)
    assert warm == cold  # the same tokens and log-probabilities


def test_a_damaged_entry_is_made_again(tessera_bin, smollm2, cold_start, tmp_path):
    store, made, cold = copy_of_cold_store(cold_start, tmp_path)
    entry = sorted((store / "int-matrix").iterdir())[0]
    data = bytearray(entry.read_bytes())
    data[HEADER + 5] ^= 0x10
    entry.write_bytes(bytes(data))
    checked = cache(tessera_bin, "verify", "--dir", store)
    assert checked.returncode == 1 and "payload does not match its SHA-256" in checked.stdout, checked.stdout
    made_again, read_again, warm = run_once(tessera_bin, smollm2, store)
    assert (made_again, read_again) == (1, made - 1)
    assert warm == cold
    assert cache(tessera_bin, "verify", "--dir", store).returncode == 0


def test_export_import_warms_another_folder_and_another_build_is_left_out(tessera_bin, smollm2, cold_start, tmp_path):
    store, made, cold = copy_of_cold_store(cold_start, tmp_path)
    archive = tmp_path / "cache.tar"
    out = cache(tessera_bin, "export", "--dir", store, archive)
    assert out.returncode == 0 and f"exported {made} entries" in out.stdout, out.stdout
    # `tar` reads it.
    names = subprocess.run(["tar", "-tf", str(archive)], capture_output=True, text=True, check=True).stdout.split()
    assert len(names) == made and all(n.startswith("int-matrix/") for n in names)
    fresh = tmp_path / "fresh"
    assert f"imported {made} entries" in cache(tessera_bin, "import", "--dir", fresh, archive).stdout
    made_there, read_there, warm = run_once(tessera_bin, smollm2, fresh)
    assert (made_there, read_there) == (0, made) and warm == cold
    # The archive as a build with another kernel ABI would have written it:
    # each entry's ABI field changed (its payload and hash untouched).
    data = bytearray(archive.read_bytes())
    at = 0
    while at + 512 <= len(data) and any(data[at:at + 512]):
        size = int(bytes(data[at + 124:at + 136]).rstrip(b"\0 ").decode(), 8)
        data[at + 512 + 8:at + 512 + 8 + 64] = b"0" * 64
        at += 512 + (size + 511) // 512 * 512
    foreign = tmp_path / "foreign.tar"
    foreign.write_bytes(bytes(data))
    other = tmp_path / "other"
    result = cache(tessera_bin, "import", "--dir", other, foreign)
    assert "imported 0 entries; left out %d of another build" % made in result.stdout, result.stdout
    made_other, read_other, _ = run_once(tessera_bin, smollm2, other)
    assert (made_other, read_other) == (made, 0)


def test_prune_keeps_the_limit(tessera_bin, cold_start, tmp_path):
    store, _, _ = copy_of_cold_store(cold_start, tmp_path)
    total = sum(f.stat().st_size for f in (store / "int-matrix").iterdir())
    half = total // 2 // (1 << 20)
    assert cache(tessera_bin, "prune", "--dir", store, "--max-mib", half).returncode == 0
    assert sum(f.stat().st_size for f in (store / "int-matrix").iterdir()) <= half << 20
    assert cache(tessera_bin, "prune", "--dir", store, "--all").returncode == 0
    assert not any((store / "int-matrix").iterdir())
    shutil.rmtree(store)
    missing = cache(tessera_bin, "ls")
    assert missing.returncode != 0 and "--dir" in missing.stderr + missing.stdout


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}


def structured_answer(d):
    status, text, _ = d.request("POST", "/v1/completions", {
        "model": "g", "prompt": "Ada is 36. As JSON:", "max_tokens": 24, "temperature": 0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA}}})
    assert status == 200, text
    return text[text.index('"choices"'):text.index('"usage"')]


def test_grammar_tables_walked_once_are_read_back_on_the_next_start(tessera_bin, smollm2, tmp_path):
    store = tmp_path / "cache"
    text = f"server:\n  cache_dir: {store}\nmodels:\n  - name: g\n    path: {smollm2}\n    kv_cache: {{budget_mb: 16}}\n"
    answers = []
    for start_number in range(2):
        d = Daemon(tessera_bin, [], text)
        try:
            answers.append(structured_answer(d))
            read = re.search(r"output grammar: (\d+) position tables walked, (\d+) read from the artifact cache", d.log_text())
            if start_number == 0:
                assert read is None, d.log_text()
                tables = list((store / "grammar-table").iterdir())
                assert tables, "no grammar table was stored"
            else:
                assert read and int(read.group(2)) == len(tables), d.log_text()
        finally:
            assert d.stop() == 0, d.log_text()
    assert answers[0] == answers[1]
