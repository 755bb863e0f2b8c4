//! UDP and TCP listeners.
//!
//! UDP: `udp_workers` OS threads per address, each with its own socket
//! bound with SO_REUSEPORT, in a blocking receive/answer/send loop: no
//! async machinery on the path that carries almost all DNS traffic.
//! TCP (RFC 7766): a tokio task per connection, several queries per
//! connection answered in order, an idle timeout and a connection cap.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::answer::{answer, AnswerConfig, Transport};
use crate::metrics::{DnsMetrics, WorkerMetrics};
use crate::store::ZoneStore;

/// Listener settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Addresses to serve on, UDP and TCP each (port 0: pick a free one).
    pub listen: Vec<SocketAddr>,
    /// UDP worker threads per address (at least 1).
    pub udp_workers: usize,
    /// Close a TCP connection idle this long (RFC 7766 §6.2.3 suggests seconds).
    pub tcp_idle_timeout: Duration,
    /// Most TCP connections open at once; more are closed on accept.
    pub max_tcp_connections: usize,
    /// Query-path limits.
    pub answer: AnswerConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 5353))],
            udp_workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            tcp_idle_timeout: Duration::from_secs(10),
            max_tcp_connections: 1024,
            answer: AnswerConfig::default(),
        }
    }
}

/// A running server. Dropping it does not stop it; call [`DnsServer::shutdown`].
#[derive(Debug)]
pub struct DnsServer {
    udp_addrs: Vec<SocketAddr>,
    tcp_addrs: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    udp_threads: Vec<std::thread::JoinHandle<()>>,
    tcp_tasks: Vec<JoinHandle<()>>,
}

/// How often a blocked UDP worker wakes to check for shutdown.
const UDP_WAKE: Duration = Duration::from_millis(200);

impl DnsServer {
    /// Binds every address and starts serving `store`. Must be called
    /// inside a tokio runtime (TCP runs on it).
    ///
    /// # Errors
    /// Binding fails (address in use, no permission for port 53, ...).
    pub async fn start(config: ServerConfig, store: Arc<ZoneStore>, metrics: Arc<DnsMetrics>) -> io::Result<DnsServer> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut server = DnsServer {
            udp_addrs: Vec::new(),
            tcp_addrs: Vec::new(),
            stop: stop.clone(),
            udp_threads: Vec::new(),
            tcp_tasks: Vec::new(),
        };
        for addr in &config.listen {
            // TCP first: with port 0 it picks the port, and UDP takes the same.
            let listener = TcpListener::from_std(bind_tcp(*addr)?)?;
            let tcp_addr = listener.local_addr()?;
            let udp_addr = SocketAddr::new(addr.ip(), tcp_addr.port());
            let first = bind_udp(udp_addr)?;
            let udp_addr = first.local_addr()?;
            let mut sockets = vec![first];
            for _ in 1..config.udp_workers.max(1) {
                sockets.push(bind_udp(udp_addr)?);
            }
            for (index, socket) in sockets.into_iter().enumerate() {
                let worker = metrics.worker(Transport::Udp);
                let store = store.clone();
                let stop = stop.clone();
                let answer_config = config.answer;
                let thread = std::thread::Builder::new()
                    .name(format!("dns-udp-{index}"))
                    .spawn(move || crate::udp::udp_loop(socket, &store, answer_config, &worker, &stop))?;
                server.udp_threads.push(thread);
            }
            let limit = Arc::new(Semaphore::new(config.max_tcp_connections.max(1)));
            let worker = metrics.worker(Transport::Tcp);
            server.tcp_tasks.push(tokio::spawn(tcp_accept_loop(
                listener,
                store.clone(),
                config.clone(),
                worker,
                limit,
            )));
            tracing::info!(udp = %udp_addr, tcp = %tcp_addr, workers = config.udp_workers.max(1), "DNS server listening");
            server.udp_addrs.push(udp_addr);
            server.tcp_addrs.push(tcp_addr);
        }
        Ok(server)
    }

    /// The bound UDP addresses, in `listen` order.
    pub fn udp_addrs(&self) -> &[SocketAddr] {
        &self.udp_addrs
    }

    /// The bound TCP addresses, in `listen` order.
    pub fn tcp_addrs(&self) -> &[SocketAddr] {
        &self.tcp_addrs
    }

    /// Stops accepting and answering; waits for the UDP workers to exit.
    pub async fn shutdown(self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in &self.tcp_tasks {
            task.abort();
        }
        let threads = self.udp_threads;
        let _ = tokio::task::spawn_blocking(move || {
            for thread in threads {
                let _ = thread.join();
            }
        })
        .await;
    }
}

fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_port(true)?;
    socket.set_read_timeout(Some(UDP_WAKE))?;
    // The kernel's default receive buffer, as Knot: a deeper queue only
    // turns a stall into seconds of late answers instead of a few drops.
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

fn bind_tcp(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

async fn tcp_accept_loop(
    listener: TcpListener,
    store: Arc<ZoneStore>,
    config: ServerConfig,
    metrics: Arc<WorkerMetrics>,
    limit: Arc<Semaphore>,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "TCP accept error");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = config.max_tcp_connections, "too many TCP connections; closing");
            drop(stream);
            continue;
        };
        let store = store.clone();
        let metrics = metrics.clone();
        let config = config.clone();
        tokio::spawn(async move {
            if let Err(e) = tcp_connection(stream, &store, &config, &metrics).await {
                tracing::debug!(error = %e, %peer, "TCP connection ended");
            }
            drop(permit);
        });
    }
}

/// RFC 1035 §4.2.2 framing: a two-octet length, then the message.
async fn tcp_connection(
    mut stream: TcpStream,
    store: &ZoneStore,
    config: &ServerConfig,
    metrics: &WorkerMetrics,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut request = vec![0u8; 65_535];
    let mut response = Vec::with_capacity(4096);
    loop {
        let mut length = [0u8; 2];
        match tokio::time::timeout(config.tcp_idle_timeout, stream.read_exact(&mut length)).await {
            Err(_) => return Ok(()), // idle: close
            Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Ok(result) => result?,
        };
        let length = u16::from_be_bytes(length) as usize;
        // A slow sender of one message gets the idle timeout too.
        tokio::time::timeout(config.tcp_idle_timeout, stream.read_exact(&mut request[..length]))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "message not received in time"))??;
        let started = Instant::now();
        let snapshot = store.load();
        match answer(
            &snapshot,
            &request[..length],
            Transport::Tcp,
            &config.answer,
            &mut response,
        ) {
            Some(answered) => {
                metrics.record(&answered, started.elapsed());
                let mut framed = Vec::with_capacity(response.len() + 2);
                framed.extend_from_slice(&(response.len() as u16).to_be_bytes());
                framed.extend_from_slice(&response);
                stream.write_all(&framed).await?;
            }
            None => {
                metrics.record_dropped();
                return Ok(()); // not a query: nothing sensible to say on this stream
            }
        }
    }
}
