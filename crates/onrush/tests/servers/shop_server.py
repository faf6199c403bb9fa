#!/usr/bin/env python3
"""A small web shop onrush did not write (Python's http.server), the witness of `onrush import
har`: a flow that only replays when correlation worked. It prints its port, then serves until
its stdin closes.

  GET  /login              HTML: a session cookie, <meta name="csrf-token"> and a hidden
                           <input name="csrf_token">, both fresh random tokens per visit; the
                           form, a stylesheet, an image, a script from http://localhost (the
                           page itself is on 127.0.0.1: another host, as a CDN)
  POST /login              form csrf_token (must be the hidden input's), user=alice,
                           password=s3cret -> 303 to /home; otherwise 403
  GET  /home               logged in only; HTML with the meta token again and a button whose
                           script creates, reads and pays an order with fetch() (the flow a
                           real browser plays: tests/servers/chromium_har_recorder.js)
  POST /api/orders         logged in, X-CSRF-Token must be the meta token -> 201
                           {"order": {"id": "ord_<random>", ...}}
  GET  /api/orders/<id>    the id must be one of this session's orders
  POST /api/orders/<id>/pay   JSON {"order_id": <the same id>, ...}
  GET  /static/*, /cdn/*   static assets (counted apart: an import leaves them out)
  GET  /__stats            the counters as JSON (what the test checks)
"""
import http.server
import json
import re
import secrets
import sys
import threading
from urllib.parse import parse_qs

# The signed-in page: its script orders a book, reads the order and pays it, as a browser's
# fetch() calls (the CSRF token from the page's <meta>, the id from the JSON response).
HOME = """<!doctype html><html><head><meta charset="utf-8"><title>Home</title>
<meta name="csrf-token" content="META"></head><body><p>Welcome</p>
<button id="order" onclick="order()">Order a book</button><p id="done"></p>
<script>
async function order() {
  const token = document.querySelector("meta[name='csrf-token']").content;
  const json = { "Content-Type": "application/json" };
  const created = await fetch("/api/orders", { method: "POST",
    headers: { ...json, "X-CSRF-Token": token }, body: JSON.stringify({ item: "book", qty: 2 }) });
  const id = (await created.json()).order.id;
  await (await fetch("/api/orders/" + id)).json();
  const paid = await fetch("/api/orders/" + id + "/pay", { method: "POST", headers: json,
    body: JSON.stringify({ order_id: id, amount: 200 }) });
  const ok = paid.ok && (await paid.json()).paid;
  document.getElementById("done").textContent = ok ? "paid " + id : "refused";
}
</script></body></html>"""

lock = threading.Lock()
sessions = {}
counts = {}


def count(key):
    with lock:
        counts[key] = counts.get(key, 0) + 1


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype="text/plain", headers=()):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def session(self):
        m = re.search(r"(?:^|;\s*)sid=([^;]+)", self.headers.get("Cookie", ""))
        return (m.group(1), sessions.get(m.group(1))) if m else (None, None)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode("utf-8", "replace")

    def fail(self, key, status=403):
        count("bad_" + key)
        self.reply(status, "refused: " + key)

    def do_GET(self):
        path = self.path.split("?")[0]
        sid, s = self.session()
        if path == "/__stats":
            with lock:
                return self.reply(200, json.dumps(counts), "application/json")
        if path.startswith("/static/") or path.startswith("/cdn/"):
            count("static")
            ctype = "text/css" if path.endswith(".css") else "application/javascript" if path.endswith(".js") else "image/png"
            return self.reply(200, "/* asset */", ctype)
        if path == "/login":
            headers = []
            if s is None:
                sid = secrets.token_hex(8)
                s = sessions[sid] = {"orders": set(), "logged_in": False}
                headers.append(("Set-Cookie", "sid=" + sid + "; Path=/; HttpOnly"))
            s["form"] = "f" + secrets.token_urlsafe(12).replace("-", "x").replace("_", "y") + "1"
            s["meta"] = "m" + secrets.token_hex(10)
            count("login_page")
            html = (
                '<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title>'
                f'<meta name="csrf-token" content="{s["meta"]}">'
                '<link rel="stylesheet" href="/static/app.css"></head><body>'
                '<form method="post" action="/login">'
                f'<input type="hidden" name="csrf_token" value="{s["form"]}">'
                '<input name="user"><input type="password" name="password"><button>Sign in</button>'
                '</form><img src="/static/logo.png">'
                # A script from another host, as a CDN serves it: an import leaves it out.
                f'<script src="http://localhost:{self.server.server_address[1]}/cdn/lib.js"></script>'
                '</body></html>'
            )
            return self.reply(200, html, "text/html; charset=utf-8", headers)
        if path == "/home":
            if not (s and s["logged_in"]):
                return self.fail("home", 401)
            count("home")
            return self.reply(200, HOME.replace("META", s["meta"]), "text/html; charset=utf-8")
        m = re.fullmatch(r"/api/orders/([A-Za-z0-9_]+)", path)
        if m:
            if not (s and s["logged_in"] and m.group(1) in s["orders"]):
                return self.fail("read", 404)
            count("read")
            return self.reply(200, json.dumps({"id": m.group(1), "status": "new"}), "application/json")
        self.reply(404, "no such page")

    def do_POST(self):
        path = self.path.split("?")[0]
        sid, s = self.session()
        body = self.body()
        if path == "/login":
            form = {k: v[0] for k, v in parse_qs(body).items()}
            if not s or form.get("csrf_token") != s.get("form"):
                return self.fail("login_csrf")
            if form.get("user") != "alice" or form.get("password") != "s3cret":
                return self.fail("login_password")
            s["logged_in"] = True
            count("login")
            return self.reply(303, "", headers=[("Location", "/home")])
        if path == "/api/orders":
            if not (s and s["logged_in"]):
                return self.fail("create_session", 401)
            if self.headers.get("X-CSRF-Token") != s.get("meta"):
                return self.fail("create_csrf")
            order = "ord_" + secrets.token_hex(6)
            s["orders"].add(order)
            count("create")
            out = {"order": {"id": order, "status": "new", "total": 200}}
            return self.reply(201, json.dumps(out), "application/json")
        m = re.fullmatch(r"/api/orders/([A-Za-z0-9_]+)/pay", path)
        if m:
            try:
                sent = json.loads(body).get("order_id")
            except ValueError:
                sent = None
            if not (s and s["logged_in"] and m.group(1) in s["orders"] and sent == m.group(1)):
                return self.fail("pay")
            count("pay")
            return self.reply(200, json.dumps({"paid": True}), "application/json")
        self.reply(404, "no such page")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
server.shutdown()
