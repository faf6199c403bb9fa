#!/usr/bin/env python3
"""An HTTP/1.1 server onrush did not write (Python's http.server) that records every request it
receives — method, path, headers, body — the witness of `onrush import curl`: real curl and
onrush are sent to it and what it saw is compared. Prints its port; serves until stdin closes.
GET /__log returns the recorded requests as JSON (and is not recorded).
"""
import http.server
import json
import sys
import threading

lock = threading.Lock()
log = []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        if self.path == "/__log":
            with lock:
                body = json.dumps(log).encode()
        else:
            n = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(n).decode("utf-8", "replace")
            with lock:
                log.append({"method": self.command, "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()}, "body": data})
            body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
