"""An HTTP/3 client on aioquic (a QUIC and HTTP/3 stack onrush did not write), for the tests of
onrush's built-in server with --http3: one QUIC connection, requests on concurrent streams.

Usage: h3_client.py HOST PORT CA_FILE GETS
  Sends GETS requests `GET /` at once, then `POST /upload` (100000 bytes), `GET /bytes/300000`
  and `GET /tls`, all on one connection. Prints one line of JSON: the statuses, how many `/`
  bodies were the server's hello, the upload's answer, the length of /bytes, /tls's document,
  and `requests` (how many requests it sent).
"""

import asyncio
import json
import sys

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http = H3Connection(self._quic)
        self._waiting = {}
        self._responses = {}

    def quic_event_received(self, event):
        for h3_event in self._http.handle_event(event):
            if isinstance(h3_event, (HeadersReceived, DataReceived)):
                response = self._responses.setdefault(
                    h3_event.stream_id, {"status": 0, "headers": {}, "body": bytearray()}
                )
                if isinstance(h3_event, HeadersReceived):
                    for name, value in h3_event.headers:
                        if name == b":status":
                            response["status"] = int(value)
                        else:
                            response["headers"][name.decode()] = value.decode()
                else:
                    response["body"] += h3_event.data
                if h3_event.stream_ended:
                    waiter = self._waiting.pop(h3_event.stream_id, None)
                    if waiter is not None:
                        waiter.set_result(self._responses.pop(h3_event.stream_id))

    async def request(self, method, authority, path, body=b""):
        stream_id = self._quic.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", path.encode()),
        ]
        if body:
            headers.append((b"content-length", str(len(body)).encode()))
        self._http.send_headers(stream_id, headers, end_stream=not body)
        if body:
            self._http.send_data(stream_id, body, end_stream=True)
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[stream_id] = waiter
        self.transmit()
        return await asyncio.wait_for(waiter, 20)


async def main():
    host, port, ca_file, gets = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.load_verify_locations(ca_file)
    authority = f"{host}:{port}"
    async with connect(host, port, configuration=config, create_protocol=Client) as client:
        hellos = await asyncio.gather(
            *[client.request("GET", authority, "/") for _ in range(gets)]
        )
        upload = await client.request("POST", authority, "/upload", b"u" * 100000)
        big = await client.request("GET", authority, "/bytes/300000")
        tls = await client.request("GET", authority, "/tls")
    out = {
        "statuses": [r["status"] for r in hellos + [upload, big, tls]],
        "hello": sum(1 for r in hellos if bytes(r["body"]) == b"Hello from onrush\n"),
        "alt_svc": [r["headers"].get("alt-svc") for r in hellos if "alt-svc" in r["headers"]],
        "upload": json.loads(bytes(upload["body"])),
        "bytes": len(big["body"]),
        "tls": json.loads(bytes(tls["body"])),
        "requests": gets + 3,
    }
    print(json.dumps(out), flush=True)


asyncio.run(main())
