#!/usr/bin/env python3
"""A UDP server onrush did not write (Python's socketserver), the witness of the UDP
protocol's end-to-end tests. It prints its port, then serves until its stdin closes.

Each datagram received is counted and answered:
  PING <x>  -> "PONG <x>"
  DROP      -> nothing (the client's reply is lost: no_reply)
  FIRE      -> nothing (counted: fire-and-forget steps)
  BIG       -> 2000 bytes "x"
  STATS     -> "<datagrams received other than STATS>"
"""
import socketserver
import sys
import threading

lock = threading.Lock()
count = 0


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        global count
        data, sock = self.request
        text = data.decode("utf-8", "replace")
        if text == "STATS":
            with lock:
                n = count
            sock.sendto(str(n).encode(), self.client_address)
            return
        with lock:
            count += 1
        if text.startswith("PING"):
            sock.sendto(("PONG" + text[4:]).encode(), self.client_address)
        elif text == "BIG":
            sock.sendto(b"x" * 2000, self.client_address)
        # DROP, FIRE and anything else: no reply.


server = socketserver.ThreadingUDPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
