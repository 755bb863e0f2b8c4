//! UDP and TCP listeners.
//!
//! UDP: `udp_workers` OS threads per address, each with its own socket
//! bound with SO_REUSEPORT, in a blocking receive/answer/send loop: no
//! async machinery on the path that carries almost all DNS traffic.
//! TCP (RFC 7766): a tokio task per connection, several queries per
//! connection answered in order, an idle timeout, and a connection cap
//! that closes the longest-idle connection for a new one (see `tcp.rs`).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::tcp::{Registry, TcpLimits, TcpService};
use crate::metrics::DnsMetrics;
use crate::query::answer::{AnswerConfig, Transport};
use crate::query::rrl::{Rrl, RrlConfig};
use crate::zone::store::ZoneStore;

/// Listener settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Addresses to serve on, UDP and TCP each (port 0: pick a free one).
    pub listen: Vec<SocketAddr>,
    /// UDP worker threads per address (at least 1).
    pub udp_workers: usize,
    /// Close a TCP connection idle this long (RFC 7766 §6.2.3 suggests
    /// seconds); also the time a started message or an answer's write may
    /// take. Above [`ServerConfig::tcp_high_water`] open connections the
    /// shorter [`ServerConfig::tcp_load_idle_timeout`] applies.
    pub tcp_idle_timeout: Duration,
    /// Most TCP connections open at once, all addresses together (at least
    /// 1). At the cap a new connection is admitted by closing the
    /// longest-idle one, connections that never completed a query first
    /// (RFC 7766 §6.2.3); a connection in the middle of a query or answer
    /// is not cut. Only when every connection is mid-message is the new
    /// one closed.
    pub max_tcp_connections: usize,
    /// Most TCP connections open at once from one client: one IPv4
    /// address, or one IPv6 /64. More are closed at accept. 0: no limit.
    pub max_tcp_connections_per_client: usize,
    /// Query-path limits.
    pub answer: AnswerConfig,
    /// Response rate limiting over UDP (off by default; TCP is never limited).
    pub rrl: RrlConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 5353))],
            udp_workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            tcp_idle_timeout: Duration::from_secs(10),
            max_tcp_connections: 1024,
            max_tcp_connections_per_client: DEFAULT_MAX_TCP_CONNECTIONS_PER_CLIENT,
            answer: AnswerConfig::default(),
            rrl: RrlConfig::default(),
        }
    }
}

/// Default of [`ServerConfig::max_tcp_connections_per_client`]: 1/16 of the
/// default cap, so one address cannot hold more than a sixteenth of it,
/// while a resolver (which needs a handful) or a NATed group of clients
/// keeps ample room.
pub const DEFAULT_MAX_TCP_CONNECTIONS_PER_CLIENT: usize = 64;

impl ServerConfig {
    /// The TCP high-water mark, in connections: 3/4 of
    /// `max_tcp_connections` (rounded up). Above it, idle connections are
    /// closed after [`ServerConfig::tcp_load_idle_timeout`] until the count
    /// is back at the mark.
    pub fn tcp_high_water(&self) -> usize {
        let max = self.max_tcp_connections.max(1);
        max - max / 4
    }

    /// The idle timeout above the high-water mark: a quarter of
    /// `tcp_idle_timeout`, at least 1 s (a client between two queries of
    /// one resolution must not lose its connection), never more than
    /// `tcp_idle_timeout`. 10 s gives 2.5 s.
    pub fn tcp_load_idle_timeout(&self) -> Duration {
        (self.tcp_idle_timeout / 4)
            .max(Duration::from_secs(1))
            .min(self.tcp_idle_timeout)
    }

    fn tcp_limits(&self) -> TcpLimits {
        TcpLimits {
            max: self.max_tcp_connections.max(1),
            per_client: self.max_tcp_connections_per_client,
            high_water: self.tcp_high_water(),
            idle_timeout: self.tcp_idle_timeout,
            load_idle_timeout: self.tcp_load_idle_timeout(),
        }
    }
}

/// A running server. [`DnsServer::shutdown`] stops it and waits for the
/// UDP workers; dropping it stops it too, without waiting (the workers
/// exit, and close their sockets, within [`UDP_WAKE`]).
#[derive(Debug)]
pub struct DnsServer {
    udp_addrs: Vec<SocketAddr>,
    tcp_addrs: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    udp_threads: Vec<std::thread::JoinHandle<()>>,
    tcp_tasks: Vec<JoinHandle<()>>,
    tcp_registry: Arc<Registry>,
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
        // One table for all listeners: the cap is about descriptors, which
        // the process shares.
        let tcp_registry = Arc::new(Registry::new(config.tcp_limits(), metrics.tcp_counters()));
        let mut server = DnsServer {
            udp_addrs: Vec::new(),
            tcp_addrs: Vec::new(),
            stop: stop.clone(),
            udp_threads: Vec::new(),
            tcp_tasks: Vec::new(),
            tcp_registry: tcp_registry.clone(),
        };
        let rrl = Rrl::new(&config.rrl, metrics.rrl_counters()).map(Arc::new);
        if rrl.is_some() {
            tracing::info!(
                rate = config.rrl.rate,
                slip = config.rrl.slip,
                exempt = config.rrl.exempt.len(),
                "response rate limiting on (UDP)"
            );
        }
        // NOTIFY (RFC 1996) for transfer-enabled zones.
        server
            .tcp_tasks
            .push(tokio::spawn(crate::xfr::notify::notify_loop(store.clone())));
        for addr in &config.listen {
            let (listener, sockets) = bind_listeners(*addr, config.udp_workers.max(1)).await?;
            let listener = TcpListener::from_std(listener)?;
            let tcp_addr = listener.local_addr()?;
            let udp_addr = sockets[0].local_addr()?;
            for (index, socket) in sockets.into_iter().enumerate() {
                let worker = metrics.worker(Transport::Udp);
                let store = store.clone();
                let stop = stop.clone();
                let answer_config = config.answer;
                let rrl = rrl.clone();
                let thread = std::thread::Builder::new()
                    .name(format!("dns-udp-{index}"))
                    .spawn(move || {
                        super::udp::udp_loop(socket, &store, answer_config, &worker, rrl.as_deref(), &stop)
                    })?;
                server.udp_threads.push(thread);
            }
            let service = TcpService {
                registry: tcp_registry.clone(),
                store: store.clone(),
                answer: config.answer,
                metrics: metrics.worker(Transport::Tcp),
            };
            server
                .tcp_tasks
                .push(tokio::spawn(super::tcp::accept_loop(listener, service)));
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
    /// Idle TCP connections close at once, busy ones after their answer.
    pub async fn shutdown(mut self) {
        self.stop_serving();
        let threads = std::mem::take(&mut self.udp_threads);
        let _ = tokio::task::spawn_blocking(move || {
            for thread in threads {
                let _ = thread.join();
            }
        })
        .await;
    }

    /// Tells the UDP workers to exit, stops accepting TCP and closes the
    /// open connections.
    fn stop_serving(&self) {
        self.stop.store(true, Ordering::Relaxed);
        for task in &self.tcp_tasks {
            task.abort();
        }
        self.tcp_registry.close_all();
    }
}

impl Drop for DnsServer {
    /// A server nobody holds must not go on answering: with SO_REUSEPORT
    /// its UDP sockets would otherwise keep a share of the datagrams sent
    /// to a new server bound to the same port.
    fn drop(&mut self) {
        self.stop_serving();
    }
}

/// Attempts at a free port when the address asks for port 0.
const FREE_PORT_ATTEMPTS: usize = 16;
/// How long a fixed port held by another UDP socket is waited for (a
/// server stopping on it closes its sockets within [`UDP_WAKE`]).
const PORT_HELD_WAIT: Duration = Duration::from_secs(2);

/// The TCP listener and `workers` UDP sockets (SO_REUSEPORT) for `addr`,
/// all on one port: with port 0 the TCP listener picks it.
///
/// SO_REUSEPORT lets any socket of the same user join a port's group and
/// take a share of its datagrams. So the port is first bound once without
/// it, which fails while any other UDP socket holds the port (a server
/// still stopping, another process): with port 0 another port is picked;
/// a fixed port held for UDP or TCP is waited for up to
/// [`PORT_HELD_WAIT`] (a dropped server lets go within [`UDP_WAKE`]), then
/// it is an error rather than a port shared with a stranger.
///
/// # Errors
/// Binding fails, or the UDP port stays held by another socket.
async fn bind_listeners(addr: SocketAddr, workers: usize) -> io::Result<(std::net::TcpListener, Vec<UdpSocket>)> {
    let started = std::time::Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        // TCP first: with port 0 it picks the port, and UDP takes the same.
        // The UDP binds are part of the attempt: another socket may take
        // the port between the exclusive check and them (a port-0 pick is
        // then simply tried again).
        let held = match bind_tcp(addr) {
            Ok(listener) => {
                let udp_addr = SocketAddr::new(addr.ip(), listener.local_addr()?.port());
                exclusive_udp_port(udp_addr).and_then(|()| {
                    let mut sockets = vec![bind_udp(udp_addr)?];
                    for _ in 1..workers {
                        sockets.push(bind_udp(udp_addr)?);
                    }
                    Ok((listener, sockets))
                })
            }
            Err(e) => Err(e),
        };
        match held {
            Ok((listener, sockets)) => return Ok((listener, sockets)),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
                if addr.port() == 0 && attempt < FREE_PORT_ATTEMPTS {
                    continue;
                }
                if addr.port() != 0 && started.elapsed() < PORT_HELD_WAIT {
                    tokio::time::sleep(UDP_WAKE / 4).await;
                    continue;
                }
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "{addr} (UDP or TCP) is held by another socket (another DNS server on this host?); \
                         not sharing it, since SO_REUSEPORT would split the queries between the two"
                    ),
                ));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Binds `addr` once without SO_REUSEPORT or SO_REUSEADDR and lets it go:
/// `AddrInUse` when any other UDP socket holds it.
fn exclusive_udp_port(addr: SocketAddr) -> io::Result<()> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())
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
