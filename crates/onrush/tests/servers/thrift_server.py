"""A Thrift server onrush did not write, for crates/onrush/tests/thrift.rs.

Apache Thrift's own Python library serves code that Apache's `thrift` compiler generated from
tests/servers/thrift/calc.thrift (the test generates it and puts it on PYTHONPATH). The handler
counts every call it handled; when stdin closes the server prints the counts as JSON.

    thrift_server.py PROTOCOL TRANSPORT MODE    # binary|compact, framed|buffered, plain|multiplexed
    thrift_server.py rogue                      # a raw socket that answers with broken replies

With THRIFT_SERVER_CERT and THRIFT_SERVER_KEY (PEM files) it serves over TLS with Apache
Thrift's own TSSLServerSocket; THRIFT_SERVER_CLIENT_CA too: a client certificate signed by that
CA is required (and, as TSSLServerSocket checks by default, valid for the client's address).
It then also counts the TLS connections it accepted (`tls_full`, `tls_resumed`, by OpenSSL's
account) and those whose handshake failed (`tls_failed`).

Prints the port it listens on (127.0.0.1, a free port) first.
"""
import json
import logging
import os
import socket
import ssl
import struct
import sys
import threading
import time
import warnings
from collections import Counter

counts = Counter()
lock = threading.Lock()


def count(name):
    with lock:
        counts[name] += 1


def serve_thrift(protocol, transport, mode):
    from calc import Calculator
    from calc.ttypes import InvalidOperation, Operation, Stats
    from shared.ttypes import SharedStruct
    from thrift.protocol import TBinaryProtocol, TCompactProtocol
    from thrift.server import TServer
    from thrift.transport import TTransport
    from thrift.TMultiplexedProcessor import TMultiplexedProcessor

    class Handler:
        def ping(self):
            count("ping")

        def add(self, num1, num2):
            count("add")
            return num1 + num2

        def calculate(self, logid, w):
            count("calculate")
            if w.op == Operation.DIVIDE and w.num2 == 0:
                count("thrown")
                raise InvalidOperation(whatOp=w.op, why="Cannot divide by 0")
            if w.op == Operation.ADD:
                return w.num1 + w.num2
            if w.op == Operation.SUBTRACT:
                return w.num1 - w.num2
            if w.op == Operation.MULTIPLY:
                return w.num1 * w.num2
            if w.op == Operation.DIVIDE:
                return w.num1 // w.num2
            raise ValueError("no op")  # a TApplicationException (internal error)

        def summarize(self, works, weights, flag):
            count("summarize")
            values = [w.num1 * 1000 + w.num2 for w in works]
            tags = {w.comment for w in works if w.comment}
            return Stats(values=values, counts=dict(weights), tags=tags, flag=not flag,
                         ratio=len(works) / 4.0, last=works[-1].op if works else None)

        def zip(self, n):
            count("zip")

        def getStruct(self, key):
            count("getStruct")
            return SharedStruct(key=key, value="v%d" % key)

    processor = Calculator.Processor(Handler())
    if mode == "multiplexed":
        mux = TMultiplexedProcessor()
        mux.registerProcessor("Calculator", processor)
        processor = mux
    sock = server_socket()
    tfactory = (TTransport.TFramedTransportFactory() if transport == "framed"
                else TTransport.TBufferedTransportFactory())
    pfactory = (TCompactProtocol.TCompactProtocolFactory() if protocol == "compact"
                else TBinaryProtocol.TBinaryProtocolFactory())
    server = TServer.TThreadedServer(processor, sock, tfactory, pfactory, daemon=True)
    sock.listen()
    port = sock.handle.getsockname()[1]
    # TServerSocket.listen() is called again by serve(); keep the bound socket.
    sock.listen = lambda: None
    threading.Thread(target=server.serve, daemon=True).start()
    return port


def server_socket():
    """TSocket's server socket, or with THRIFT_SERVER_CERT TSSLSocket's, counting handshakes."""
    from thrift.transport import TSocket, TSSLSocket

    if not os.environ.get("THRIFT_SERVER_CERT"):
        return TSocket.TServerSocket(host="127.0.0.1", port=0)
    # The handshakes the tests make fail on purpose are counted (`tls_failed`), not logged;
    # the library's own deprecation warnings (ssl.PROTOCOL_TLS, match_hostname) are its own.
    logging.getLogger("thrift.transport.TSSLSocket").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", category=DeprecationWarning)

    class CountingSSLServerSocket(TSSLSocket.TSSLServerSocket):
        def accept(self):
            client = super().accept()
            if client is None:
                count("tls_failed")
            else:
                count("tls_resumed" if client.handle.session_reused else "tls_full")
            return client

    options = {"certfile": os.environ["THRIFT_SERVER_CERT"],
               "keyfile": os.environ["THRIFT_SERVER_KEY"]}
    if os.environ.get("THRIFT_SERVER_CLIENT_CA"):
        options["ca_certs"] = os.environ["THRIFT_SERVER_CLIENT_CA"]
        options["cert_reqs"] = ssl.CERT_REQUIRED
    return CountingSSLServerSocket(host="127.0.0.1", port=0, **options)


def serve_rogue():
    """Each connection gets one broken reply to its first framed request, in turn: a frame of
    garbage, a frame announcing 1 GiB, half a frame then a close."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)

    def handle(conn, kind):
        with conn:
            head = conn.recv(4)
            if len(head) < 4:
                return
            (n,) = struct.unpack(">i", head)
            need = n
            while need > 0:
                chunk = conn.recv(need)
                if not chunk:
                    return
                need -= len(chunk)
            if kind == 0:
                conn.sendall(struct.pack(">i", 6) + b"\xde\xad\xbe\xef\x00\x01")
                count("garbage")
            elif kind == 1:
                conn.sendall(struct.pack(">i", 1 << 30) + b"\x80\x01\x00\x02")
                count("oversized")
            else:
                conn.sendall(struct.pack(">i", 64) + b"\x80\x01\x00\x02\x00\x00")
                count("half")
            time.sleep(0.05)

    def accept():
        i = 0
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=handle, args=(conn, i % 3), daemon=True).start()
            i += 1

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def main():
    if sys.argv[1] == "rogue":
        port = serve_rogue()
    else:
        port = serve_thrift(*sys.argv[1:4])
    print(port, flush=True)
    sys.stdin.read()
    # Oneway calls and the last replies may still be in the handler: let them finish.
    time.sleep(0.3)
    with lock:
        print(json.dumps(dict(counts)), flush=True)


if __name__ == "__main__":
    main()
