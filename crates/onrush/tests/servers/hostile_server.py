#!/usr/bin/env python3
"""A hostile target (stdlib only) for the hostile-target matrix (tests/hostile.rs): every way a
broken or malicious server can answer, one behaviour per path or port. It prints one JSON line
of its ports, then serves until its stdin closes.

Usage: hostile_server.py [--tls CERT KEY] [--br-bomb FILE]

HTTP/1.1 port ("http"), by path (requests are GETs; the path's first segment picks):
  /ok              a well-behaved 200 (the harness checks the server is up)
  /reset-mid       head (Content-Length 100000) and 1000 bytes of body, then a TCP reset
  /garbage         "GARBAGE 200 OK" as a status line
  /endless-chunked a chunked body that never ends (1 KiB chunks, as fast as the client reads)
  /huge-header     a 10 MB header line
  /slowloris       a valid response, one byte a second
  /silent          reads the request, never answers, keeps the connection open
  /close           reads the request, closes without answering
  /http10          "HTTP/1.0 200 OK" without Content-Length: the body ends at the close (valid)
  /bad-chunk       a chunk size of "5g"
  /gzip-bomb       1 GiB of zeros gzip'd (~1 MB), Content-Encoding: gzip
  /br-bomb         the file given with --br-bomb, Content-Encoding: br
  /short-body      Content-Length: 1000 and 10 bytes, then close
  /twice           two responses to one request, in one write
HTTP/2 with prior knowledge (h2c), one port per flood; each answers the preface with its
SETTINGS, reads up to the client's first HEADERS, then floods without ever answering a request
and without reading again:
  "h2_settings"    empty SETTINGS frames (each demands an ACK)
  "h2_ping"        PING frames (each demands an ACK)
  "h2_rst"         RST_STREAM on stream 1 (the first request), over and over
TLS port ("tls", with --tls): every request gets a head (Content-Length 100000) and 1000 bytes;
  then by path:
  /tls-close-notify  a TLS close_notify alert mid-body, then the TCP close
  /tls-abrupt        the TCP connection closed mid-body without any alert
  /tls-garbage       bytes that are not a TLS record mid-body (the record layer breaks)
"""
import json
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
import zlib

args = sys.argv[1:]
TLS = None
BR_BOMB = None
while args:
    if args[0] == "--tls":
        TLS = (args[1], args[2])
        args = args[3:]
    elif args[0] == "--br-bomb":
        BR_BOMB = args[1]
        args = args[2:]
    else:
        sys.exit("unknown argument " + args[0])

_gzip_bomb = None
_gzip_lock = threading.Lock()


def gzip_bomb():
    """1 GiB of zeros, gzip'd (about 1 MB), built once. Compressing 1 GiB takes seconds, so
    one MiB of zeros is deflated with a full flush (which resets the compressor's history, so
    every MiB gives the same bytes) and those bytes are repeated: the same stream gzip would
    write, in milliseconds."""
    global _gzip_bomb
    with _gzip_lock:
        if _gzip_bomb is None:
            mib = bytes(1 << 20)
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            block = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
            crc = 0
            for _ in range(1024):
                crc = zlib.crc32(mib, crc)
            tail = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
            header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
            _gzip_bomb = (header + block * 1024 + tail
                          + struct.pack("<II", crc, (1024 << 20) & 0xFFFFFFFF))
        return _gzip_bomb


def read_head(rfile):
    """The request line's path, after reading the head up to its empty line; None at EOF."""
    line = rfile.readline()
    if not line:
        return None
    while True:
        h = rfile.readline()
        if not h or h in (b"\r\n", b"\n"):
            break
    parts = line.split()
    return parts[1].decode() if len(parts) > 1 else "/"


def response(body, extra=b""):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def reset(sock):
    # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class Http(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            path = read_head(self.rfile)
            if path is None:
                return
            what = path.strip("/").split("/")[0]
            w = self.wfile
            if what == "ok":
                w.write(response(b"ok"))
                w.flush()
                continue
            if what == "reset-mid":
                w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
                w.flush()
                time.sleep(0.05)
                reset(self.connection)
            elif what == "garbage":
                w.write(b"GARBAGE 200 OK\r\nContent-Length: 2\r\n\r\nok")
            elif what == "endless-chunked":
                w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
                while True:
                    w.write(chunk)
            elif what == "huge-header":
                w.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 10_000_000
                        + b"\r\nContent-Length: 2\r\n\r\nok")
            elif what == "slowloris":
                for b in response(b"ok"):
                    w.write(bytes([b]))
                    w.flush()
                    time.sleep(1)
            elif what == "silent":
                while self.rfile.read(1):
                    pass
            elif what == "close":
                pass
            elif what == "http10":
                w.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + b"until close " * 100)
            elif what == "bad-chunk":
                w.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5g\r\nhello\r\n0\r\n\r\n")
            elif what == "gzip-bomb":
                w.write(response(gzip_bomb(), b"Content-Encoding: gzip\r\n"))
                w.flush()
                continue
            elif what == "br-bomb":
                with open(BR_BOMB, "rb") as f:
                    w.write(response(f.read(), b"Content-Encoding: br\r\n"))
                w.flush()
                continue
            elif what == "short-body":
                w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
            elif what == "twice":
                w.write(response(b"answer") + response(b"stale"))
                w.flush()
                continue
            else:
                w.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                w.flush()
                continue
            w.flush()
            return


def frame(typ, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([typ, flags]) + struct.pack(">I", stream) + payload


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_flood(kind):
    class H2(socketserver.BaseRequestHandler):
        def handle(self):
            s = self.request
            got = b""
            while len(got) < len(PREFACE):
                more = s.recv(65536)
                if not more:
                    return
                got += more
            if not got.startswith(PREFACE):
                return
            s.sendall(frame(0x4, 0, 0))  # our SETTINGS: none
            # Read frames until the client's first request (HEADERS): the flood then hits a
            # connection with a request in flight (and stream 1 exists to be reset).
            got = got[len(PREFACE):]
            while True:
                while len(got) >= 9 and len(got) >= 9 + int.from_bytes(got[:3], "big"):
                    typ = got[3]
                    got = got[9 + int.from_bytes(got[:3], "big"):]
                    if typ == 0x1:
                        break
                else:
                    more = s.recv(65536)
                    if not more:
                        return
                    got += more
                    continue
                break
            if kind == "settings":
                burst = frame(0x4, 0, 0) * 1000
            elif kind == "ping":
                burst = frame(0x6, 0, 0, b"12345678") * 1000
            else:
                # Stream 1 is the client's first request: reset, then reset again and again
                # (frames on a closed stream, which a client must ignore, cheaply).
                burst = frame(0x3, 0, 1, struct.pack(">I", 0x2)) * 1000
            # Never read again: the client's ACKs pile up in its own buffers if it keeps
            # answering; sendall blocks once the socket buffers are full.
            while True:
                s.sendall(burst)
    return H2


class Tls(socketserver.BaseRequestHandler):
    def handle(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(TLS[0], TLS[1])
        try:
            conn = ctx.wrap_socket(self.request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        rfile = conn.makefile("rb")
        path = read_head(rfile)
        if path is None:
            return
        what = path.strip("/").split("/")[0]
        if what == "ok":
            conn.sendall(response(b"ok", b"Connection: close\r\n"))
            conn.unwrap()
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 1000)
        time.sleep(0.05)
        if what == "tls-close-notify":
            raw = conn.unwrap()  # sends close_notify
            raw.close()
        elif what == "tls-abrupt":
            raw = socket.socket(fileno=conn.detach())
            raw.close()
        elif what == "tls-garbage":
            raw = socket.socket(fileno=conn.detach())
            raw.sendall(b"\x99not a TLS record at all\r\n" * 10)
            time.sleep(0.2)
            raw.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # The client gives up on these connections on purpose (resets, closes, timeouts).
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError, OSError)):
            return
        super().handle_error(request, client_address)


def serve(handler):
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


servers = {
    "http": serve(Http),
    "h2_settings": serve(h2_flood("settings")),
    "h2_ping": serve(h2_flood("ping")),
    "h2_rst": serve(h2_flood("rst")),
}
if TLS:
    servers["tls"] = serve(Tls)
print(json.dumps({k: v.server_address[1] for k, v in servers.items()}), flush=True)
sys.stdin.read()
for s in servers.values():
    s.shutdown()
