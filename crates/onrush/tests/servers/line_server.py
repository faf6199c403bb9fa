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
"""
import socketserver
import struct
import sys
import threading
import time

import os

LOG = open(os.environ["LINE_SERVER_LOG"], "a") if os.environ.get("LINE_SERVER_LOG") else None
lock = threading.Lock()
count = 0


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        global count
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


server = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
