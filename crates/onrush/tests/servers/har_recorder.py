#!/usr/bin/env python3
"""Plays a browser against shop_server.py and writes what it did as a HAR 1.2 file shaped like
Chrome's "Save all as HAR": pages, `_resourceType`, the browser's headers (Connection, Cookie,
Accept-Encoding, sec-fetch-*...), static assets and a third-party host (`localhost` beside the
site's `127.0.0.1`), real gaps between pages. The tokens and ids in it are the live server's.

usage: har_recorder.py PORT OUT.har
"""
import datetime
import http.client
import json
import re
import sys
import time

port, out = int(sys.argv[1]), sys.argv[2]
cookies = {}
entries = []
pages = []
UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def page(title):
    pid = "page_%d" % (len(pages) + 1)
    pages.append({"startedDateTime": iso(time.time()), "id": pid, "title": title, "pageTimings": {}})
    return pid


def fetch(pid, kind, method, host, path, headers=(), body=None, ctype=None):
    url = "http://%s:%d%s" % (host, port, path)
    sent = [("Host", "%s:%d" % (host, port)), ("Connection", "keep-alive"), ("User-Agent", UA),
            ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8" if kind == "document" else "*/*"),
            ("Accept-Encoding", "gzip, deflate, br, zstd"), ("Accept-Language", "en-GB,en;q=0.9"),
            ("sec-ch-ua-platform", '"Linux"'), ("Sec-Fetch-Mode", "navigate" if kind == "document" else "cors")]
    sent += list(headers)
    if body is not None:
        sent += [("Content-Type", ctype), ("Content-Length", str(len(body.encode())))]
    if cookies and host == "127.0.0.1":
        sent.append(("Cookie", "; ".join("%s=%s" % kv for kv in cookies.items())))
    start = time.time()
    conn = http.client.HTTPConnection(host, port, timeout=5)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in sent:
        conn.putheader(k, v)
    conn.endheaders(body.encode() if body is not None else None)
    resp = conn.getresponse()
    data = resp.read().decode("utf-8", "replace")
    elapsed = (time.time() - start) * 1000
    conn.close()
    rheaders = resp.getheaders()
    for k, v in rheaders:
        if k.lower() == "set-cookie":
            name, value = v.split(";")[0].split("=", 1)
            cookies[name] = value
    entry = {
        "_resourceType": kind, "pageref": pid, "startedDateTime": iso(start), "time": round(elapsed, 3),
        "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1",
                    "headers": [{"name": k, "value": v} for k, v in sent], "queryString": [], "cookies": [],
                    "headersSize": -1, "bodySize": len(body or "")},
        "response": {"status": resp.status, "statusText": resp.reason, "httpVersion": "HTTP/1.1",
                     "headers": [{"name": k, "value": v} for k, v in rheaders], "cookies": [],
                     "content": {"size": len(data), "mimeType": resp.getheader("Content-Type", "x-unknown").split(";")[0],
                                 "text": data},
                     "redirectURL": resp.getheader("Location", ""), "headersSize": -1, "bodySize": len(data)},
        "cache": {}, "timings": {"send": 0, "wait": round(elapsed, 3), "receive": 0},
    }
    if body is not None:
        entry["request"]["postData"] = {"mimeType": ctype, "text": body}
    entries.append(entry)
    return resp, data


p1 = page("Sign in")
_, html = fetch(p1, "document", "GET", "127.0.0.1", "/login")
fetch(p1, "stylesheet", "GET", "127.0.0.1", "/static/app.css")
fetch(p1, "image", "GET", "127.0.0.1", "/static/logo.png")
fetch(p1, "script", "GET", "localhost", "/cdn/lib.js")
form_token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
meta_token = re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)
time.sleep(0.3)  # the user types
resp, _ = fetch(p1, "document", "POST", "127.0.0.1", "/login", [("Origin", "http://127.0.0.1:%d" % port)],
                "csrf_token=%s&user=alice&password=s3cret" % form_token, "application/x-www-form-urlencoded")
assert resp.status == 303, resp.status
p2 = page("Home")
fetch(p2, "document", "GET", "127.0.0.1", "/home")
time.sleep(0.3)  # the user clicks "order"
_, created = fetch(p2, "fetch", "POST", "127.0.0.1", "/api/orders", [("X-CSRF-Token", meta_token)],
                   json.dumps({"item": "book", "qty": 2}), "application/json")
order = json.loads(created)["order"]["id"]
_, got = fetch(p2, "fetch", "GET", "127.0.0.1", "/api/orders/%s" % order)
resp, _ = fetch(p2, "fetch", "POST", "127.0.0.1", "/api/orders/%s/pay" % order, [],
                json.dumps({"order_id": order, "amount": 200}), "application/json")
assert resp.status == 200, resp.status
har = {"log": {"version": "1.2", "creator": {"name": "har_recorder.py", "version": "1"},
               "pages": pages, "entries": entries}}
with open(out, "w") as f:
    json.dump(har, f, indent=2)
