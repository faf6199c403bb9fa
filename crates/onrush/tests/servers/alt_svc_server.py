"""An HTTPS/1.1 server (Python's ssl and http.server, not onrush's) whose every response
advertises HTTP/3 with `Alt-Svc: h3=":UDP_PORT"`, for the test of `version: auto` falling back
to TCP when the advertised QUIC endpoint does not answer.

Usage: alt_svc_server.py CERT KEY UDP_PORT
Prints its TCP port on its first line, serves until its stdin closes, then prints one line of
JSON: requests (answered) and connections (TLS connections accepted).
"""

import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {"requests": 0, "connections": 0}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        with lock:
            counts["connections"] += 1

    def do_GET(self):
        with lock:
            counts["requests"] += 1
        body = b"hello over tcp\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Alt-Svc", f'h3=":{sys.argv[3]}"; ma=60')
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    context.set_alpn_protocols(["http/1.1"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()
    with lock:
        print(json.dumps(counts), flush=True)


main()
