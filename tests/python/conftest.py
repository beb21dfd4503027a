"""Shared fixtures: the tessera binary and the real models."""
import os
import pathlib
import subprocess
import sys
import tempfile

import socket

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def tessera_bin():
    path = pathlib.Path(os.environ.get("TESSERA_BIN", ROOT / "build" / "tessera"))
    if not path.exists():
        pytest.fail(f"{path} not built (make build)")
    return path


@pytest.fixture(scope="session")
def model_dir():
    return pathlib.Path(os.environ.get("TESSERA_MODEL_DIR", pathlib.Path.home() / ".cache" / "tessera" / "models"))


def real_model(model_dir, file):
    path = model_dir / file
    if not path.exists():
        pytest.skip(f"{path} not fetched (scripts/fetch-models.sh)")
    return path


@pytest.fixture(scope="session")
def smollm2(model_dir):
    return real_model(model_dir, "SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="session")
def gemma3(model_dir):
    return real_model(model_dir, "gemma-3-270m-q4_k_m.gguf")


@pytest.fixture(scope="session")
def qwen25_coder(model_dir):
    return real_model(model_dir, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


@pytest.fixture(scope="module")
def daemon(tessera_bin, smollm2):
    """`tessera serve --model` on SmolLM2 (named smollm2), one per test module."""
    from daemon import Daemon
    d = Daemon(tessera_bin, ["--model", smollm2, "--served-model-name", "smollm2"])
    yield d
    assert d.stop() == 0


def free_port():
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, timeout=120, **kwargs):
    """Runs a command; bytes arguments pass through unchanged."""
    argv = [a if isinstance(a, bytes) else str(a) for a in args]
    return subprocess.run(argv, capture_output=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="session")
def pb():
    """Python stubs generated from the daemon's own .proto."""
    from grpc_tools import protoc
    out = pathlib.Path(tempfile.mkdtemp())
    proto_dir = ROOT / "server" / "proto"
    rc = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}",
                      str(proto_dir / "tessera" / "v1" / "generation.proto")])
    assert rc == 0
    sys.path.insert(0, str(out))
    from tessera.v1 import generation_pb2, generation_pb2_grpc
    return generation_pb2, generation_pb2_grpc


def model_level_models(all_models):
    """The subset of `all_models` (name -> fixture) that model-level tests
    run on: TESSERA_TEST_MODELS, comma-separated names or "all" (the
    default). `make test` and CI take the smallest, smollm2;
    `make test-full` takes all."""
    wanted = os.environ.get("TESSERA_TEST_MODELS", "all")
    if wanted == "all":
        return dict(all_models)
    names = wanted.split(",")
    unknown = set(names) - set(all_models)
    if unknown:
        raise ValueError(f"TESSERA_TEST_MODELS names unknown models {sorted(unknown)}; known: {sorted(all_models)}")
    return {name: value for name, value in all_models.items() if name in names}
