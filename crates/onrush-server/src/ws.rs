//! WebSocket (RFC 6455) on the plain port, under `/ws/`: a connection whose first line is
//! `GET /ws/... HTTP/1.1` ([`crate::sniff`]) is handed to tungstenite for the handshake and the
//! framing, not to hyper, so HTTP/1.1 connections pay nothing for it (no upgrade machinery on
//! hyper's path). One endpoint, `/ws/echo`: every text or binary message is answered in kind
//! with the behaviours of [`crate::behave`]; pings are answered with pongs (tungstenite), a
//! close with a close. Any other path under `/ws/` is refused with 404 before the upgrade.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::io::BufReader;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Message};
use tokio_tungstenite::WebSocketStream;

use crate::behave::{self, Behaviour};
use crate::stats::{Event, Shared};

/// The echo endpoint.
pub(crate) const ECHO_PATH: &str = "/ws/echo";

/// Bytes read from the socket at a time.
const READ_BUFFER: usize = 8 * 1024;

/// tungstenite's `read_buffer_size`: what it zero-fills before each read from `READ_BUFFER`.
const TUNGSTENITE_READ: usize = 1024;

/// Serves one WebSocket connection, handshake included, until it closes.
pub(crate) async fn serve(stream: TcpStream, shared: Arc<Shared>, shard: usize) {
    #[allow(clippy::result_large_err)] // tungstenite's callback type, not ours
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        if req.uri().path() == ECHO_PATH {
            Ok(resp)
        } else {
            let mut refusal = ErrorResponse::new(Some(format!(
                "no WebSocket endpoint at {}; the endpoint is {ECHO_PATH}\n",
                req.uri().path()
            )));
            *refusal.status_mut() = hyper::StatusCode::NOT_FOUND;
            Err(refusal)
        }
    };
    // As onrush's client does (onrush-proto-ws, transport.rs): tungstenite zero-fills up to
    // `read_buffer_size` (128 KiB by default) before every read, so it reads small pieces from
    // a buffer zeroed once; a longer message still arrives whole.
    let config = WebSocketConfig::default().read_buffer_size(TUNGSTENITE_READ);
    let stream = BufReader::with_capacity(READ_BUFFER, stream);
    let Ok(mut ws) =
        tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await
    else {
        return;
    };
    shared.count(shard, Event::WsConnection);
    while let Some(Ok(msg)) = ws.next().await {
        let (payload, text) = match msg {
            Message::Text(t) => (Bytes::from(t), true),
            Message::Binary(b) => (b, false),
            Message::Ping(_) => {
                // tungstenite queued the pong; it goes out with the next write or flush.
                shared.count(shard, Event::WsPing);
                if ws.flush().await.is_err() {
                    return;
                }
                continue;
            }
            Message::Close(_) => {
                // tungstenite answers the close; reading on lets it finish the closing.
                continue;
            }
            Message::Pong(_) | Message::Frame(_) => continue,
        };
        shared.count(shard, Event::WsMessage);
        if !answer(&mut ws, &payload, text).await {
            return;
        }
    }
}

/// Answers one data message; false when the connection is done.
async fn answer(
    ws: &mut WebSocketStream<BufReader<TcpStream>>,
    payload: &Bytes,
    text: bool,
) -> bool {
    let reply = |bytes: &[u8]| -> Message {
        let data = payload.slice_ref(bytes);
        if text {
            // A slice of valid UTF-8 after an ASCII command word is valid UTF-8 too.
            match tokio_tungstenite::tungstenite::Utf8Bytes::try_from(data) {
                Ok(t) => Message::Text(t),
                Err(_) => Message::Binary(payload.slice_ref(bytes)),
            }
        } else {
            Message::Binary(data)
        }
    };
    match behave::parse(payload) {
        Behaviour::Echo(m) => ws.send(reply(m)).await.is_ok(),
        Behaviour::Error(e) => ws.send(Message::text(e)).await.is_ok(),
        Behaviour::Delay(d, m) => {
            tokio::time::sleep(d).await;
            ws.send(reply(m)).await.is_ok()
        }
        Behaviour::Stream(n, m) => {
            for _ in 0..n {
                if ws.feed(reply(m)).await.is_err() {
                    return false;
                }
            }
            ws.flush().await.is_ok()
        }
        Behaviour::Close(code, reason) => {
            let frame = CloseFrame {
                code: CloseCode::from(code.unwrap_or(1000)),
                reason: String::from_utf8_lossy(reason).into_owned().into(),
            };
            let _ = ws.close(Some(frame)).await;
            // Wait for the client's close (or its going away), as RFC 6455 7.1.1 asks.
            while let Some(Ok(_)) = ws.next().await {}
            false
        }
        Behaviour::Stall => {
            // Silent from now on: read and drop until the client goes away (tungstenite still
            // answers pings as it reads: a stalled application, not a dead peer).
            while let Some(Ok(_)) = ws.next().await {}
            false
        }
    }
}
