//! The HTTP client the OTLP exporters send with: one HTTP/1.1 request per export over a new
//! loopback-or-LAN TCP connection, on the export runtime's thread, with hyper (which the
//! daemon already has for its listener) instead of a second HTTP stack.
//!
//! Every request is bounded: the whole exchange (connect, send, response head and body) by
//! the export timeout, the response body by [`MAX_RESPONSE_BYTES`]. Only `http://` endpoints
//! are supported: hookd links no TLS stack, so a collector across the network is reached
//! through a local collector agent (docs/fleet.md).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// The largest collector answer read (an OTLP answer is a few bytes of partial-success).
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Sends each request on the export runtime (`handle`), within `timeout`.
#[derive(Debug, Clone)]
pub(crate) struct OtlpHttp {
    /// The runtime of the export thread: requests run there whoever awaits them (the
    /// metrics reader awaits from a thread of its own).
    pub(crate) handle: tokio::runtime::Handle,
    /// The bound of one whole exchange.
    pub(crate) timeout: Duration,
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OtlpHttpError {
    /// The endpoint is not a plain `http://host:port/...` URL.
    #[error("unsupported endpoint {0} (hookd sends OTLP over plain http to a local collector)")]
    Endpoint(String),
    /// The exchange took longer than the export timeout.
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    /// Connecting, sending or reading failed.
    #[error("{0}")]
    Io(String),
}

impl OtlpHttp {
    /// One exchange, unbounded in time (the caller bounds it).
    async fn exchange(request: Request<Bytes>) -> Result<Response<Bytes>, OtlpHttpError> {
        let uri = request.uri().clone();
        if uri.scheme_str() != Some("http") {
            return Err(OtlpHttpError::Endpoint(uri.to_string()));
        }
        let host = uri
            .host()
            .ok_or_else(|| OtlpHttpError::Endpoint(uri.to_string()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(80);
        let stream = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|err| OtlpHttpError::Io(format!("connect {host}:{port}: {err}")))?;
        let _ = stream.set_nodelay(true);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|err| OtlpHttpError::Io(err.to_string()))?;
        // The connection task ends with the exchange (the sender is dropped then).
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let (mut parts, body) = request.into_parts();
        if !parts.headers.contains_key(hyper::header::HOST) {
            if let Ok(value) = hyper::header::HeaderValue::from_str(&format!("{host}:{port}")) {
                parts.headers.insert(hyper::header::HOST, value);
            }
        }
        // Origin-form target, as HTTP/1.1 servers expect.
        if let Some(path) = uri.path_and_query() {
            if let Ok(target) = path.as_str().parse() {
                parts.uri = target;
            }
        }
        let response = sender
            .send_request(hyper::Request::from_parts(parts, Full::new(body)))
            .await
            .map_err(|err| OtlpHttpError::Io(err.to_string()))?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|err| OtlpHttpError::Io(err.to_string()))?
            .to_bytes();
        Ok(Response::from_parts(parts, body))
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let timeout = self.timeout;
        let task = self.handle.spawn(async move {
            match tokio::time::timeout(timeout, OtlpHttp::exchange(request)).await {
                Ok(result) => result,
                Err(_) => Err(OtlpHttpError::TimedOut(timeout)),
            }
        });
        match task.await {
            Ok(result) => result.map_err(|err| Box::new(err) as HttpError),
            Err(err) => Err(Box::new(OtlpHttpError::Io(err.to_string())) as HttpError),
        }
    }
}
