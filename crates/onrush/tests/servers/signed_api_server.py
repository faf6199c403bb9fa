#!/usr/bin/env python3
"""An API that checks every request's HMAC, the witness of onrush's `before:` hooks (written
with Python's http.server and hmac, not by onrush). It prints its port, serves until its stdin
closes, then prints its counts as one line of JSON.

  POST /orders        X-Signature must be hex(HMAC-SHA256(key, body)): counted good or bad;
                      answers {"ok": true, "nonce": N} (N fresh per request) when good, 401
                      otherwise; remembers N for the client's next request
  GET  /next?value=V  V must be 2 * N + 1 for the N this connection's last order got:
                      counted right or wrong
  GET  /items?n=K     {"items": [...K items...]}: custom checks count them
"""
import hashlib
import hmac
import http.server
import json
import sys
import threading
from urllib.parse import parse_qs, urlparse

KEY = sys.argv[1].encode() if len(sys.argv) > 1 else b"k3y"
lock = threading.Lock()
counts = {"good": 0, "bad": 0, "right": 0, "wrong": 0, "items": 0}
nonce = [0]
# Nonces handed out, by value: /next must prove it computed from one of them.
issued = set()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        want = hmac.new(KEY, body, hashlib.sha256).hexdigest()
        got = self.headers.get("X-Signature", "")
        with lock:
            if hmac.compare_digest(want, got):
                counts["good"] += 1
                nonce[0] += 1
                n = nonce[0]
                issued.add(n)
            else:
                counts["bad"] += 1
                n = None
        if n is None:
            self.reply(401, {"ok": False})
        else:
            self.reply(200, {"ok": True, "nonce": n})

    def do_GET(self):
        url = urlparse(self.path)
        q = parse_qs(url.query)
        if url.path == "/next":
            value = int(q.get("value", ["-1"])[0])
            with lock:
                ok = (value - 1) % 2 == 0 and (value - 1) // 2 in issued
                counts["right" if ok else "wrong"] += 1
            self.reply(200 if ok else 400, {"ok": ok})
        elif url.path == "/items":
            k = int(q.get("n", ["0"])[0])
            with lock:
                counts["items"] += 1
                if k < 3:
                    counts["few"] = counts.get("few", 0) + 1
            self.reply(200, {"items": list(range(k))})
        else:
            self.reply(404, {})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
server.shutdown()
with lock:
    print(json.dumps(counts), flush=True)
