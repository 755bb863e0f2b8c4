//! Serving one accepted connection, what every stand-in here shares: HTTP/1
//! or HTTP/2 (hyper-util's `auto` builder), over TLS when the server has
//! an acceptor, until the connection ends or the server stops.

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves `tcp` with `service` (after the TLS handshake when `tls` is
/// given; a failed handshake just ends the connection) until the client
/// closes it or `closed` changes (the server stops).
pub async fn connection<S, B>(tcp: TcpStream, tls: Option<TlsAcceptor>, service: S, mut closed: watch::Receiver<()>)
where
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let builder = auto::Builder::new(TokioExecutor::new());
    match tls {
        Some(acceptor) => {
            let Ok(stream) = acceptor.accept(tcp).await else { return };
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                _ = closed.changed() => {}
            }
        }
        None => {
            let connection = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::select! {
                _ = connection => {}
                _ = closed.changed() => {}
            }
        }
    }
}

/// Accepts connections on `listener` until `stopped` changes (or its
/// sender is dropped), serving each with a service from `make` through
/// [`connection`]; an accept error waits 20 ms and goes on.
pub fn accept_loop<F, S, B>(listener: TcpListener, tls: Option<TlsAcceptor>, mut stopped: watch::Receiver<()>, make: F)
where
    F: Fn() -> S + Send + 'static,
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = stopped.changed() => return,
            };
            let Ok((tcp, _)) = accepted else {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            };
            tokio::spawn(connection(tcp, tls.clone(), make(), stopped.clone()));
        }
    });
}
