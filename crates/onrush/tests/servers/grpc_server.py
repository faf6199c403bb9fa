"""The witness gRPC server of tests/grpc.rs, on Python's grpcio (not written by onrush).

Generates its stubs from grpc/echo.proto at start (grpcio-tools' protoc, into a temporary
directory), prints its port, serves until stdin closes, then prints what it counted as JSON:
calls per method, request messages, the metadata it saw, deadlines it was given.
TLS when GRPC_SERVER_CERT and GRPC_SERVER_KEY name PEM files (mutual TLS when GRPC_CLIENT_CA
names the CA of client certificates too). Server reflection (grpcio-reflection, v1alpha) when
GRPC_REFLECTION is `on`; `first_only` answers a file request with the file alone, not its
imports (as servers that send each file once per stream do), so that the client asks for them.
`connections` counts the distinct client addresses (TCP connections) calls came on.
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

here = os.path.dirname(os.path.abspath(__file__))
gen = tempfile.mkdtemp(prefix="onrush-grpc-stubs-")
subprocess.check_call([
    sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(here, "grpc"),
    "--python_out=" + gen, "--grpc_python_out=" + gen, "echo.proto",
])
sys.path.insert(0, gen)
import echo_pb2  # noqa: E402
import echo_pb2_grpc  # noqa: E402

# Loaded: the generated stubs are not read again, so they do not stay behind in /tmp.
shutil.rmtree(gen, ignore_errors=True)

lock = threading.Lock()
counts = collections.Counter()
peers = set()


def count(key, n=1):
    with lock:
        counts[key] += n


def user_of(context):
    with lock:
        peers.add(context.peer())
    md = dict(context.invocation_metadata())
    if md.get("authorization") == "Bearer secret":
        count("authorized")
    if context.time_remaining() is not None:
        count("with_deadline")
    return md.get("x-user", "")


class Echo(echo_pb2_grpc.EchoServicer):
    def Unary(self, request, context):
        count("Unary")
        count("messages_in")
        user = user_of(context)
        if request.inner.flag:
            count("inner_flag")
        count("tags", len(request.tags))
        count("attrs", len(request.attrs))
        if request.mood == echo_pb2.LOUD:
            count("loud")
        if request.raw:
            count("raw_bytes", len(request.raw))
        count("text_bytes", len(request.text))
        return echo_pb2.EchoReply(text="echo " + request.text, n=request.n + 1, user=user)

    def ServerStream(self, request, context):
        count("ServerStream")
        count("messages_in")
        user_of(context)
        for i in range(request.count):
            count("messages_out")
            yield echo_pb2.EchoReply(text="%s %d" % (request.text, i), n=i)

    def ClientStream(self, request_iterator, context):
        count("ClientStream")
        user = user_of(context)
        n = 0
        total = 0
        for r in request_iterator:
            count("messages_in")
            n += 1
            total += r.n
        return echo_pb2.EchoReply(text="got %d" % n, n=total, count=n, user=user)

    def Bidi(self, request_iterator, context):
        count("Bidi")
        user_of(context)
        for r in request_iterator:
            count("messages_in")
            count("messages_out")
            yield echo_pb2.EchoReply(text="echo " + r.text, n=r.n)

    def Fail(self, request, context):
        count("Fail")
        count("messages_in")
        user_of(context)
        context.abort(_code(request.code), request.message)

    def Slow(self, request, context):
        count("Slow")
        count("messages_in")
        user_of(context)
        time.sleep(request.millis / 1000.0)
        return echo_pb2.EchoReply(text="slept")


def _code(n):
    for c in grpc.StatusCode:
        if c.value[0] == n:
            return c
    raise ValueError(n)


def enable_reflection(server, mode):
    from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

    names = (echo_pb2.DESCRIPTOR.services_by_name["Echo"].full_name, reflection.SERVICE_NAME)
    servicer = reflection.ReflectionServicer(names)
    if mode == "first_only":
        inner = servicer.ServerReflectionInfo

        def first_only(request_iterator, context):
            for response in inner(request_iterator, context):
                if response.HasField("file_descriptor_response"):
                    files = response.file_descriptor_response.file_descriptor_proto
                    count("reflection_imports_held_back", len(files) - 1)
                    del files[1:]
                yield response

        servicer.ServerReflectionInfo = first_only
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)


def main():
    # Enough threads for every call in flight at once (the connections test holds 50).
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
    echo_pb2_grpc.add_EchoServicer_to_server(Echo(), server)
    mode = os.environ.get("GRPC_REFLECTION")
    if mode:
        enable_reflection(server, mode)
    cert, key = os.environ.get("GRPC_SERVER_CERT"), os.environ.get("GRPC_SERVER_KEY")
    if cert and key:
        client_ca = os.environ.get("GRPC_CLIENT_CA")
        creds = grpc.ssl_server_credentials(
            [(open(key, "rb").read(), open(cert, "rb").read())],
            root_certificates=open(client_ca, "rb").read() if client_ca else None,
            require_client_auth=bool(client_ca),
        )
        port = server.add_secure_port("127.0.0.1:0", creds)
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()
    server.stop(grace=1)
    out = dict(counts)
    out["connections"] = len(peers)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
