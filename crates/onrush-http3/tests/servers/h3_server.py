"""An HTTP/3 witness server on aioquic (a QUIC and HTTP/3 stack onrush did not write), for
onrush-http3's tests and the `onrush run` test with `version: h3`.

Prints its UDP port on its first line, serves until its stdin closes, then prints its own counts
as one line of JSON: connections (handshakes completed), resumed (of those, resumed TLS
sessions), requests, and requests per connection.

Routes:
  /hello         200, body "hello over h3", header x-served-by: aioquic
  /token         200, JSON {"token": "t-<n>"} (n: the request's number), for extractors
  /echo          200, the request body back, x-body-length: its length
  /bytes/N       200, N bytes of 'x' (sent in 16 KiB pieces)
  /status/N      status N, empty body
  /reset         the stream is reset with H3_REQUEST_REJECTED (0x10b)
  anything else  404

Usage: h3_server.py CERT KEY [ALPN]   (ALPN: h3 by default; another one makes a server that
does not speak HTTP/3 for the client's ALPN)
"""

import asyncio
import json
import sys

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import HandshakeCompleted, ProtocolNegotiated

counts = {"connections": 0, "resumed": 0, "requests": 0, "per_connection": []}


class Handler(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = None
        self._index = None
        self._requests = {}

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self._http = H3Connection(self._quic)
        if isinstance(event, HandshakeCompleted):
            counts["connections"] += 1
            if event.session_resumed:
                counts["resumed"] += 1
            self._index = len(counts["per_connection"])
            counts["per_connection"].append(0)
        if self._http is None:
            return
        for h3_event in self._http.handle_event(event):
            self._http_event(h3_event)

    def _http_event(self, event):
        if isinstance(event, HeadersReceived):
            headers = dict(event.headers)
            self._requests[event.stream_id] = (headers, bytearray())
            if event.stream_ended:
                self._answer(event.stream_id)
        elif isinstance(event, DataReceived):
            if event.stream_id in self._requests:
                self._requests[event.stream_id][1].extend(event.data)
                if event.stream_ended:
                    self._answer(event.stream_id)

    def _answer(self, stream_id):
        headers, body = self._requests.pop(stream_id)
        counts["requests"] += 1
        if self._index is not None:
            counts["per_connection"][self._index] += 1
        path = headers.get(b":path", b"/").decode()
        status, extra, data = 404, [], b"not found"
        if path == "/hello":
            status, extra, data = 200, [(b"x-served-by", b"aioquic")], b"hello over h3"
        elif path == "/token":
            status, data = 200, json.dumps({"token": "t-%d" % counts["requests"]}).encode()
            extra = [(b"content-type", b"application/json")]
        elif path == "/echo":
            status, data = 200, bytes(body)
            extra = [(b"x-body-length", str(len(body)).encode())]
        elif path.startswith("/bytes/"):
            status, data = 200, b"x" * int(path[len("/bytes/"):])
        elif path.startswith("/status/"):
            status, data = int(path[len("/status/"):]), b""
        elif path == "/reset":
            self._quic.reset_stream(stream_id, 0x10B)
            self.transmit()
            return
        self._http.send_headers(
            stream_id,
            [(b":status", str(status).encode()), (b"content-length", str(len(data)).encode())]
            + extra,
            end_stream=not data,
        )
        for i in range(0, len(data), 16384):
            piece = data[i : i + 16384]
            self._http.send_data(stream_id, piece, end_stream=i + 16384 >= len(data))
        self.transmit()


class Tickets:
    """Session tickets kept in memory, so that clients can resume."""

    def __init__(self):
        self.tickets = {}

    def add(self, ticket):
        self.tickets[ticket.ticket] = ticket

    def pop(self, label):
        return self.tickets.pop(label, None)


async def main():
    cert, key = sys.argv[1], sys.argv[2]
    alpn = sys.argv[3] if len(sys.argv) > 3 else "h3"
    config = QuicConfiguration(is_client=False, alpn_protocols=[alpn], max_datagram_frame_size=None)
    config.load_cert_chain(cert, key)
    tickets = Tickets()
    server = await serve(
        "127.0.0.1",
        0,
        configuration=config,
        create_protocol=Handler,
        session_ticket_fetcher=tickets.pop,
        session_ticket_handler=tickets.add,
    )
    port = server._transport.get_extra_info("sockname")[1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    # Serve until the test closes stdin.
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()
    print(json.dumps(counts), flush=True)


asyncio.run(main())
