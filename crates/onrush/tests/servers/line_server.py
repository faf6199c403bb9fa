#!/usr/bin/env python3
"""A line-based TCP server onrush did not write (Python's socketserver), the witness of the
TCP protocol's end-to-end tests. It prints its port, then serves until its stdin closes.

Each line received is counted and answered:
  PING <x>   -> "PONG <x>\n"
  SILENT     -> nothing (the client times out)
  QUIT       -> the connection is closed without a reply
  BIN        -> 4 bytes: DE AD BE EF
  LP <x>     -> "PONG <x>" after a 4-byte big-endian length (not counting itself)
  LPLE       -> "LITTLE" after a 2-byte little-endian length counting itself (8)
  LPHUGE     -> a 4-byte prefix announcing 2 GiB, then nothing more
  LPCUT      -> a prefix announcing 100 bytes, 3 of them, then the connection is closed
  CHUNKS     -> "part1 ", 50 ms later "part2", then silence
  CLOSE <x>  -> "BYE <x>" and the connection is closed
  BIG        -> 100 bytes "x" and the connection is closed
  FIRE       -> nothing (counted: fire-and-forget steps)
  SINK <n>   -> reads n bytes more, answers "GOT <n> <sum of the bytes>\n"
  STATS      -> "<lines received other than STATS>\n"

TLS (Python's `ssl` module, OpenSSL) when LINE_SERVER_CERT and LINE_SERVER_KEY name PEM files;
LINE_SERVER_CLIENT_CA too: a client certificate signed by that CA is required (mutual TLS).
When stdin closes the server prints its counts as JSON: lines received, and with TLS the
handshakes that completed (full or resumed, by OpenSSL's own account) and those that failed.
"""
import json
import os
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time

LOG = open(os.environ["LINE_SERVER_LOG"], "a") if os.environ.get("LINE_SERVER_LOG") else None
lock = threading.Lock()
count = 0
tls_counts = {"full": 0, "resumed": 0, "failed": 0}

TLS = None
if os.environ.get("LINE_SERVER_CERT"):
    TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    TLS.load_cert_chain(os.environ["LINE_SERVER_CERT"], os.environ["LINE_SERVER_KEY"])
    if os.environ.get("LINE_SERVER_CLIENT_CA"):
        TLS.load_verify_locations(os.environ["LINE_SERVER_CLIENT_CA"])
        TLS.verify_mode = ssl.CERT_REQUIRED


def tls_handshake(sock):
    """Completes the server's handshake, counting it; False when it failed. A failed
    connection is closed the well-behaved way: the alert was sent, our side is shut, and what
    the client still sends is read until it closes (so it reads the alert, not a reset)."""
    try:
        sock.do_handshake()
    except (ssl.SSLError, OSError):
        with lock:
            tls_counts["failed"] += 1
        try:
            socket.socket.shutdown(sock, socket.SHUT_WR)
            sock.settimeout(5)
            while socket.socket.recv(sock, 4096):
                pass
        except OSError:
            pass
        return False
    with lock:
        tls_counts["resumed" if sock.session_reused else "full"] += 1
    return True


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        global count
        if TLS is not None and not tls_handshake(self.request):
            return
        for line in self.rfile:
            text = line.decode("utf-8", "replace").rstrip("\n")
            if LOG:
                LOG.write(repr(line) + "\n")
                LOG.flush()
            if text == "STATS":
                with lock:
                    n = count
                self.wfile.write(f"{n}\n".encode())
                continue
            with lock:
                count += 1
            if text.startswith("PING"):
                self.wfile.write(("PONG" + text[4:] + "\n").encode())
            elif text == "QUIT":
                return
            elif text == "BIN":
                self.wfile.write(bytes([0xDE, 0xAD, 0xBE, 0xEF]))
            elif text.startswith("LP "):
                body = ("PONG " + text[3:]).encode()
                self.wfile.write(struct.pack(">I", len(body)) + body)
            elif text == "LPLE":
                self.wfile.write(struct.pack("<H", 8) + b"LITTLE")
            elif text == "LPHUGE":
                self.wfile.write(struct.pack(">I", 1 << 31))
            elif text == "LPCUT":
                self.wfile.write(struct.pack(">I", 100) + b"abc")
                return
            elif text == "CHUNKS":
                self.wfile.write(b"part1 ")
                self.wfile.flush()
                time.sleep(0.05)
                self.wfile.write(b"part2")
            elif text.startswith("CLOSE"):
                self.wfile.write(("BYE" + text[5:]).encode())
                return
            elif text.startswith("SINK "):
                n = int(text[5:])
                data = self.rfile.read(n)
                self.wfile.write(f"GOT {len(data)} {sum(data)}\n".encode())
            elif text == "BIG":
                self.wfile.write(b"x" * 100)
                return
            # SILENT and anything else: no reply.


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def get_request(self):
        sock, addr = super().get_request()
        if TLS is not None:
            # The handshake runs in the connection's thread (Handler), not in the accept loop.
            sock = TLS.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def handle_error(self, request, client_address):
        # A client that closes without TLS's close_notify ends a connection's thread with an
        # SSLEOFError: the client's way to close, not the server's fault.
        if not isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError)):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
with lock:
    stats = {"lines": count}
    if TLS is not None:
        stats.update(tls_counts)
print(json.dumps(stats), flush=True)
