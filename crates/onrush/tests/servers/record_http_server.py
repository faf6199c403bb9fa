#!/usr/bin/env python3
"""An HTTP/1.1 server onrush did not write (Python's http.server), the witness of the exec
step's and the setup/teardown phases' end-to-end tests. It prints its port, then serves until
its stdin closes.

Every request other than GET /stats is answered 200 with a small JSON body and counted twice:
under "path <path>" and under "auth <Authorization header or '-'>".
  POST /login  -> {"token": "tok-<n>"} (n counts logins: a second login gives another token)
  GET /stats   -> the counts as a JSON object
"""
import http.server
import json
import sys
import threading

lock = threading.Lock()
counts = {}
logins = 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        global logins
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path == "/stats":
            with lock:
                self.answer(dict(counts))
            return
        with lock:
            for key in ("path " + self.path, "auth " + self.headers.get("Authorization", "-")):
                counts[key] = counts.get(key, 0) + 1
            if self.path == "/login":
                logins += 1
                body = {"token": "tok-%d" % logins}
            else:
                body = {"ok": True}
        self.answer(body)

    do_GET = handle_any
    do_POST = handle_any
    do_DELETE = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
server.shutdown()
