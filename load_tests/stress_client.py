"""One request of each kind the stress scenarios send, and how it ended.

Outcome kinds: completed, errored (accepted, then ended by an error),
cancelled (the client left mid-stream on purpose), rejected (an HTTP status
or gRPC code before acceptance: 400, 429, ...), lost (no outcome at all:
a broken connection or a malformed answer, which must never happen)."""
import dataclasses
import http.client
import json
import pathlib
import random
import sys
import tempfile
import threading
import time

import grpc

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS = ("the quick brown fox jumps over a lazy dog while seven wise owls count stars above the quiet river "
         "and a small robot writes poems about tea").split()


@dataclasses.dataclass
class Outcome:
    kind: str
    status: int = 200
    detail: str = ""


def grpc_stubs():
    from grpc_tools import protoc
    out = pathlib.Path(tempfile.mkdtemp())
    proto_dir = ROOT / "server" / "proto"
    rc = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}",
                      str(proto_dir / "tessera" / "v1" / "generation.proto")])
    if rc != 0:
        raise RuntimeError("protoc failed")
    sys.path.insert(0, str(out))
    from tessera.v1 import generation_pb2, generation_pb2_grpc
    return generation_pb2, generation_pb2_grpc


class Client:
    def __init__(self, daemon, max_model_len, grpc_share):
        self.daemon = daemon
        self.max_model_len = max_model_len
        self.grpc_share = grpc_share
        self.pb, pb_grpc = grpc_stubs()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{daemon.grpc_port}")
        self.stub = pb_grpc.GenerationStub(self.channel)
        self.local = threading.local()

    def close(self):
        self.channel.close()

    def run(self, kind, honour_retry_after=False):
        for _ in range(20):
            try:
                outcome = getattr(self, f"_{kind}")()
            except (OSError, http.client.HTTPException, ValueError) as e:
                return Outcome("lost", 0, f"{kind}: {type(e).__name__}: {e}")
            if not (honour_retry_after and outcome.kind == "rejected" and outcome.status == 429):
                return outcome
            time.sleep(float(outcome.detail or 1))
        return outcome

    # --- request kinds -------------------------------------------------------

    def _prompt(self):
        return " ".join(random.choice(WORDS) for _ in range(random.randint(4, 24)))

    def _stream(self):
        if random.random() < self.grpc_share:
            return self._grpc_stream()
        return self._sse({"prompt": self._prompt(), "max_tokens": 48}, cancel_after=None)

    def _cancel(self):
        return self._sse({"prompt": self._prompt(), "max_tokens": 200}, cancel_after=3)

    def _plain(self):
        status, headers, body = self._post({"model": "m", "prompt": self._prompt(), "max_tokens": 32, "ignore_eos": True})
        return self._whole(status, headers, body)

    def _invalid(self):
        status, headers, body = self._post({"model": "m", "prompt": "hi", "temperature": 5})
        return Outcome("rejected", status) if status == 400 else Outcome("lost", status, "invalid request not refused")

    def _long(self):
        ids = [random.randint(100, 40000) for _ in range(self.max_model_len - 40)]
        status, headers, body = self._post({"model": "m", "prompt": ids, "max_tokens": 16, "ignore_eos": True})
        return self._whole(status, headers, body)

    # --- transports ----------------------------------------------------------

    def _connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.daemon.http_port, timeout=300)

    def _post(self, body):
        conn = self._connection()
        try:
            conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    @staticmethod
    def _refusal(status, headers):
        if status == 429 and "Retry-After" not in headers:
            return Outcome("rejected", 429, "retry_after_missing")
        return Outcome("rejected", status, headers.get("Retry-After", ""))

    def _whole(self, status, headers, body):
        if status != 200:
            return self._refusal(status, headers) if status < 500 else Outcome("errored", status)
        reply = json.loads(body)
        return Outcome("completed") if reply["choices"][0]["finish_reason"] else Outcome("lost", 200, "no finish")

    def _sse(self, fields, cancel_after):
        conn = self._connection()
        try:
            body = dict(fields, model="m", stream=True, ignore_eos=True)
            conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
            r = conn.getresponse()
            if r.status != 200:
                headers = dict(r.getheaders())
                r.read()
                return self._refusal(r.status, headers) if r.status < 500 else Outcome("errored", r.status)
            events = 0
            finished = False
            while True:
                line = r.readline()
                if not line:
                    return Outcome("lost", 200, "stream ended without [DONE]")
                line = line.strip()
                if not line.startswith(b"data: "):
                    continue
                data = line[6:]
                if data == b"[DONE]":
                    return Outcome("completed") if finished else Outcome("errored", 200, "no finish_reason")
                event = json.loads(data)
                if "error" in event:
                    return Outcome("errored", 200, event["error"].get("message", ""))
                events += 1
                finished |= any(c.get("finish_reason") for c in event.get("choices", []))
                if cancel_after is not None and events >= cancel_after and not finished:
                    conn.sock.shutdown(2)
                    return Outcome("cancelled")
        finally:
            conn.close()

    def _grpc_stream(self):
        request = self.pb.GenerateRequest(model="m", prompt=self._prompt(), max_tokens=48, ignore_eos=True)
        accepted = False
        try:
            for message in self.stub.Generate(request, timeout=300):
                accepted = True
                if message.HasField("usage"):
                    return Outcome("completed")
            return Outcome("lost", 0, "gRPC stream ended without usage")
        except grpc.RpcError as e:
            if accepted:
                return Outcome("errored", 0, e.code().name)
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                return Outcome("rejected", 429, "1")
            if e.code() == grpc.StatusCode.INVALID_ARGUMENT:
                return Outcome("rejected", 400)
            return Outcome("errored", 0, e.code().name)
