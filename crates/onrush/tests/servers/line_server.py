#!/usr/bin/env python3
"""A line-based TCP server onrush did not write (Python's socketserver), the witness of the
TCP protocol's end-to-end tests. It prints its port, then serves until its stdin closes.

Each line received is counted and answered:
  PING <x>   -> "PONG <x>\n"
  SILENT     -> nothing (the client times out)
  QUIT       -> the connection is closed without a reply
  BIN        -> 4 bytes: DE AD BE EF
  STATS      -> "<lines received other than STATS>\n"
"""
import socketserver
import sys
import threading

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
            # SILENT and anything else: no reply.


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
