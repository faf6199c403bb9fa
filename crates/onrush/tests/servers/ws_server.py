#!/usr/bin/env python3
"""A WebSocket server onrush did not write (Python's `websockets`, pinned by
tests/install-websockets.sh), the witness of the WebSocket protocol's end-to-end tests. It prints
its port, serves until its stdin closes, then prints one line of JSON with its own counts:

  {"connections": N, "rejected": N, "subprotocol": {"chat.v1": N, ...}, "text": N,
   "binary": N, "pongs": N, "closes": {"1000": N, ...}, "longest": {"text": N, "binary": N},
   "deflate": N, "cookies": {"a=1; b=2": N, ...}}

"cookies" counts the `Cookie` headers of the upgrade requests by value; every accepted upgrade's
response sets the cookie `upgraded=yes`. "deflate" counts the connections that agreed on permessage-deflate (the library accepts the
client's offer by default, as most servers do: its messages out are then compressed, and those
in are inflated by the library before this server sees them).

Paths:
  /chat      needs the header `X-Token: secret` (else 403) and records the subprotocol
             negotiated (the server offers chat.v1). Each message is counted (text or binary):
               "echo <x>"   -> "echo <x>"
               "burst <n>"  -> n messages "burst 1" .. "burst <n>"
               "silent"     -> nothing
               "pingme"     -> the server pings the client, and answers "ponged" when the pong
                               came within 2 s (counted in "pongs"), else "no pong"
               binary       -> the same bytes reversed
             The close code the client sent is recorded when the socket ends, and the length
             of the longest text and binary message received ("longest", after decoding).
  /malformed a frame with a reserved opcode, after the client's first message
  /oversized a 2 MiB text message, after the client's first message
  /cut       the start of a 100-byte frame, then the connection is dropped, after the client's
             first message
  /bye       a close frame with code 4001 after the client's first message

With WS_SERVER_CERT and WS_SERVER_KEY (PEM files) in the environment it serves wss:// (TLS).
With WS_DEFLATE=no_context_takeover it answers permessage-deflate with
`server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10`: each message
is compressed on its own both ways, and a client that kept its context would send back-references
this server cannot inflate (it would close with 1007).
"""
import asyncio
import json
import logging
import os
import ssl
import sys
import threading

from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.http11 import Response

QUIET = logging.getLogger("ws_server")
QUIET.disabled = True

stats = {
    "connections": 0,
    "rejected": 0,
    "subprotocol": {},
    "text": 0,
    "binary": 0,
    "pongs": 0,
    "closes": {},
    "longest": {"text": 0, "binary": 0},
    "deflate": 0,
    "cookies": {},
}


def process_request(connection, request):
    cookie = request.headers.get("Cookie")
    if cookie is not None:
        stats["cookies"][cookie] = stats["cookies"].get(cookie, 0) + 1
    if request.path.startswith("/chat") and request.headers.get("X-Token") != "secret":
        stats["rejected"] += 1
        return Response(403, "Forbidden", Headers([("Content-Length", "0")]), b"")
    return None


def process_response(connection, request, response):
    # Every accepted upgrade sets a cookie, for the client's jar.
    if response.status_code == 101:
        response.headers["Set-Cookie"] = "upgraded=yes; Path=/"
    return response


async def chat(ws):
    protocol = ws.subprotocol or "none"
    stats["subprotocol"][protocol] = stats["subprotocol"].get(protocol, 0) + 1
    try:
        async for message in ws:
            kind = "binary" if isinstance(message, bytes) else "text"
            stats["longest"][kind] = max(stats["longest"][kind], len(message))
            if isinstance(message, bytes):
                stats["binary"] += 1
                await ws.send(message[::-1])
                continue
            stats["text"] += 1
            if message.startswith("echo "):
                await ws.send(message)
            elif message == "pingme":
                waiter = await ws.ping()
                try:
                    await asyncio.wait_for(waiter, 2)
                    stats["pongs"] += 1
                    await ws.send("ponged")
                except asyncio.TimeoutError:
                    await ws.send("no pong")
            elif message.startswith("burst "):
                for i in range(1, int(message[6:]) + 1):
                    await ws.send(f"burst {i}")
    except Exception:
        pass
    code = ws.close_code if ws.close_code is not None else 1006
    key = str(code)
    stats["closes"][key] = stats["closes"].get(key, 0) + 1


async def fault(ws, kind):
    try:
        await ws.recv()
    except Exception:
        return
    if kind == "/malformed":
        # FIN + reserved opcode 0xF, no payload.
        ws.transport.write(b"\x8f\x00")
    elif kind == "/oversized":
        await ws.send("x" * (2 * 1024 * 1024))
    elif kind == "/cut":
        # FIN + text, 100 bytes announced, 10 sent, then the TCP connection is dropped.
        ws.transport.write(b"\x81\x64" + b"y" * 10)
        await asyncio.sleep(0.05)
        ws.transport.abort()
        return
    elif kind == "/bye":
        await ws.close(4001, "bye")
        return
    try:
        await asyncio.sleep(5)
    except Exception:
        pass


async def handler(ws):
    stats["connections"] += 1
    if "permessage-deflate" in (ws.response.headers.get("Sec-WebSocket-Extensions") or ""):
        stats["deflate"] += 1
    path = ws.request.path.split("?")[0]
    if path == "/chat":
        await chat(ws)
    else:
        await fault(ws, path)


async def main():
    stop = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()

    def wait_stdin():
        sys.stdin.read()
        loop.call_soon_threadsafe(stop.set_result, None)

    threading.Thread(target=wait_stdin, daemon=True).start()
    tls = None
    if os.environ.get("WS_SERVER_CERT"):
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(os.environ["WS_SERVER_CERT"], os.environ["WS_SERVER_KEY"])
    deflate = {}
    if os.environ.get("WS_DEFLATE") == "no_context_takeover":
        deflate = {
            "compression": None,
            "extensions": [
                ServerPerMessageDeflateFactory(
                    server_no_context_takeover=True,
                    client_no_context_takeover=True,
                    server_max_window_bits=10,
                )
            ],
        }
    async with serve(
        handler,
        "127.0.0.1",
        0,
        subprotocols=["chat.v1"],
        process_request=process_request,
        process_response=process_response,
        ping_interval=None,
        max_size=4 * 1024 * 1024,
        # Refused handshakes are part of the tests: not worth a traceback each.
        logger=QUIET,
        ssl=tls,
        **deflate,
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(port, flush=True)
        await stop
        server.close()
        await server.wait_closed()
    print(json.dumps(stats), flush=True)


asyncio.run(main())
