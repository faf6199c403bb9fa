//! A small HTTP/2 client for the tests, straight on the `h2` crate (no hyper client in
//! between), over h2c with prior knowledge or over TLS with ALPN: the tests see the server's
//! frames as they are (status, headers, DATA), and can open many streams on one connection.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use h2::client::SendRequest;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// Client windows large enough that a download is limited by the server, not by the client's
/// flow control.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 8 << 20;

/// One HTTP/2 connection; cheap to clone (every clone sends on the same connection).
#[derive(Clone)]
pub struct H2 {
    send: SendRequest<Bytes>,
    base: String,
    /// The ALPN protocol negotiated (TLS only).
    pub alpn: Option<Vec<u8>>,
}

#[derive(Debug)]
pub struct H2Response {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl H2Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("utf-8 body")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

/// A rustls client trusting `ca_pem`, offering `alpn`, presenting `client_cert` (chain PEM,
/// key PEM) when given.
pub fn tls_config(
    ca_pem: &str,
    alpn: &[&[u8]],
    client_cert: Option<(&str, &str)>,
) -> Arc<rustls::ClientConfig> {
    tls_config_versions(ca_pem, alpn, client_cert, rustls::DEFAULT_VERSIONS)
}

/// [`tls_config`] limited to these TLS versions.
pub fn tls_config_versions(
    ca_pem: &str,
    alpn: &[&[u8]],
    client_cert: Option<(&str, &str)>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(versions)
    .unwrap()
    .with_root_certificates(roots);
    let mut config = match client_cert {
        Some((chain, key)) => {
            let chain = CertificateDer::pem_slice_iter(chain.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

fn builder() -> h2::client::Builder {
    let mut b = h2::client::Builder::new();
    b.initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    b
}

impl H2 {
    /// h2c with prior knowledge on the plain port.
    pub async fn h2c(addr: SocketAddr) -> H2 {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let (send, conn) = builder().handshake(tcp).await.expect("h2c handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        H2 {
            send,
            base: format!("http://{addr}"),
            alpn: None,
        }
    }

    /// HTTP/2 over TLS (the caller's config should offer `h2`).
    pub async fn tls(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> H2 {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .expect("TLS handshake");
        let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "ALPN did not pick h2");
        let (send, conn) = builder().handshake(tls).await.expect("h2 handshake");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        H2 {
            send,
            base: format!("https://localhost:{}", addr.port()),
            alpn,
        }
    }

    /// The sender, to drive streams by hand.
    pub fn sender(&self) -> SendRequest<Bytes> {
        self.send.clone()
    }

    /// A request for `path` on this connection's authority.
    pub fn request_for(&self, method: &str, path: &str) -> http::Request<()> {
        http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .body(())
            .unwrap()
    }

    /// Sends one request (with `body`, if not empty) and reads the whole response.
    pub async fn request(&self, method: &str, path: &str, body: &[u8]) -> H2Response {
        self.request_with(method, path, &[], body).await
    }

    /// [`H2::request`] with extra request headers.
    pub async fn request_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> H2Response {
        let mut request = self.request_for(method, path);
        for (name, value) in headers {
            request.headers_mut().append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_str(value).unwrap(),
            );
        }
        let mut send = self.send.clone().ready().await.expect("connection usable");
        let (response, mut stream) = send
            .send_request(request, body.is_empty())
            .expect("stream opened");
        if !body.is_empty() {
            stream
                .send_data(Bytes::copy_from_slice(body), true)
                .expect("body sent");
        }
        let (parts, mut recv) = response.await.expect("response").into_parts();
        let mut body = Vec::new();
        while let Some(chunk) = recv.data().await {
            let chunk = chunk.expect("body frame");
            recv.flow_control().release_capacity(chunk.len()).unwrap();
            body.extend_from_slice(&chunk);
        }
        H2Response {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> H2Response {
        self.request("GET", path, b"").await
    }

    /// `GET /stats` on this connection, parsed.
    pub async fn stats(&self) -> serde_json::Value {
        let r = self.get("/stats").await;
        assert_eq!(r.status, 200);
        r.json()
    }
}
