#!/usr/bin/env python3
"""An HTTP/1.1 server that misbehaves on purpose (stdlib only), the witness of the end-to-end
tests for unsolicited responses and for requests cut by a stop. It prints its port, then serves
until its stdin closes.

Requests are GETs without a body. By path:
  /twice/<id>        -> "answer <id>", and in the same write a second response "stale <id>"
  /twice-split/<id>  -> "answer <id>", then at once, in a second write, "stale <id>"
  /twice-later/<id>  -> "answer <id>", then 20 ms later a second response "stale <id>"
  /once/<id>         -> "answer <id>" (a well-behaved answer)
  /hang/<id>         -> nothing, ever (the connection stays open)
  /garbage/<id>      -> "GARBAGE 200 OK" as a status line, then the connection is closed
  /bad-chunk/<id>    -> a chunked body whose chunk size is "5g", then the connection is closed
  /stats             -> "<requests received other than /stats>" (its own count)
Every response is `200 OK` with a Content-Length and keeps the connection alive.
"""
import os
import socketserver
import sys
import threading
import time

lock = threading.Lock()
count = 0


def response(body):
    body = body.encode()
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        global count
        while True:
            line = self.rfile.readline()
            if not line:
                return
            # The rest of the head: headers up to the empty line.
            while True:
                h = self.rfile.readline()
                if not h or h in (b"\r\n", b"\n"):
                    break
            parts = line.split()
            path = parts[1].decode() if len(parts) > 1 else "/"
            if path == "/stats":
                with lock:
                    n = count
                self.wfile.write(response(str(n)))
                continue
            with lock:
                count += 1
            what, _, ident = path.strip("/").partition("/")
            if what == "twice":
                self.wfile.write(response("answer " + ident) + response("stale " + ident))
            elif what == "twice-split":
                self.wfile.write(response("answer " + ident))
                self.wfile.write(response("stale " + ident))
            elif what == "twice-later":
                self.wfile.write(response("answer " + ident))
                self.wfile.flush()
                time.sleep(0.02)
                self.wfile.write(response("stale " + ident))
            elif what == "garbage":
                self.wfile.write(b"GARBAGE 200 OK\r\nContent-Length: 2\r\n\r\nok")
                self.wfile.flush()
                return
            elif what == "bad-chunk":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5g\r\nhello\r\n0\r\n\r\n")
                self.wfile.flush()
                return
            elif what == "hang":
                # Keep the connection open and never answer: the client's request stays in
                # flight until it gives up or is stopped.
                while self.rfile.read(1):
                    pass
                return
            else:
                self.wfile.write(response("answer " + ident))
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # onrush drops connections that misbehave, sometimes with a reset: expected here.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


# ROGUE_BIND: another address of this machine (a veth end for tests across namespaces).
server = Server((os.environ.get("ROGUE_BIND", "127.0.0.1"), 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
