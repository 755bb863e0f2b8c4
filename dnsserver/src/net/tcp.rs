//! The TCP listener (RFC 7766): a tokio task per connection answering RFC
//! 1035 §4.2.2 framed queries in order, and a registry of the open
//! connections that keeps TCP open to new clients under pressure. TCP is
//! where truncated UDP answers go, so a client that fills the connection
//! table with idle connections must not close it for everyone else.
//!
//! What RFC 7766 §6.2.3 asks ("servers ... close idle connections when
//! resources run short, limit per client"), as done here:
//!
//! * At the cap (`max_tcp_connections`, all listeners together) a new
//!   connection is admitted by closing the longest-idle open one: first
//!   among connections that never completed a query (what an idle flood
//!   is made of), then among the rest. A connection receiving a message
//!   or writing an answer is never chosen, unless its message has been
//!   arriving for more than [`STALLED_MESSAGE`] (a slow drip, not a query
//!   in flight). With nothing to close, the new connection is closed.
//!   A connection chosen while idle still answers a query that already
//!   sits in its socket buffer, then closes.
//!   The same eviction runs when `accept` fails for want of descriptors.
//! * One client, an IPv4 address or an IPv6 /64 (what one host is usually
//!   given), holds at most `max_tcp_connections_per_client` connections. A
//!   new one past that closes the client's own longest-idle connection, by
//!   the same choice as at the cap, so a resolver pool behind one address
//!   is never locked out by its own idle connections; only when every one
//!   of its connections is mid-message is the new one closed at accept.
//! * Above the high-water mark (3/4 of the cap) an idle connection is
//!   closed after the shorter idle timeout, until the count is back at the
//!   mark (Knot and NSD likewise shorten their timeouts under load).
//!
//! The query path touches the registry only through the connection's own
//! atomics; the registry's lock is taken once per accept and once per close.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use crate::metrics::{TcpCounters, WorkerMetrics};
use crate::query::answer::{answer_or_defer, AnswerConfig, Deferred, Transport};
use crate::zone::store::ZoneStore;

/// A message that has been arriving for longer than this no longer
/// protects its connection from being closed at the cap: on any real
/// path a query arrives within a round trip or two.
pub(crate) const STALLED_MESSAGE: Duration = Duration::from_secs(1);
/// Free room kept for a read, in octets: a few pipelined queries.
const READ_CHUNK: usize = 2048;
/// Pending answers are written once they reach this size, in octets.
const FLUSH_AT: usize = 16 * 1024;
/// An idle connection gives back an input buffer larger than this, in octets.
const KEEP_BUFFER: usize = 16 * 1024;
/// How often an idle connection past the shorter timeout, below the
/// high-water mark, looks at the load again.
const LOAD_RECHECK: Duration = Duration::from_secs(1);
/// At most one warning about TCP pressure per this many milliseconds: an
/// attack must not also flood the log.
const WARN_INTERVAL_MS: u64 = 10_000;

/// What a connection is doing, for the choice of whom to close.
mod state {
    /// Between messages: nothing received of the next one.
    pub const IDLE: u8 = 0;
    /// Part of a message received.
    pub const READING: u8 = 1;
    /// Answering complete messages.
    pub const ANSWERING: u8 = 2;
    /// Writing answers: the client has them to read.
    pub const WRITING: u8 = 3;
}

/// Why a connection was asked to close (its `close` field).
mod close {
    /// Not asked.
    pub const NO: u8 = 0;
    /// Chosen at the cap while idle: closes at its next idle point, so a
    /// message that raced the choice is still answered.
    pub const IDLE: u8 = 1;
    /// Chosen at the cap with a stalled message: closes at once.
    pub const STALLED: u8 = 2;
    /// Server shutting down.
    pub const SHUTDOWN: u8 = 3;
}

/// The client a connection counts against: an IPv4 address, or the /64 of
/// an IPv6 address (IPv4-mapped IPv6 addresses count as IPv4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    V4(u32),
    V6(u64),
}

impl ClientKey {
    pub(crate) fn of(ip: IpAddr) -> ClientKey {
        match ip.to_canonical() {
            IpAddr::V4(v4) => ClientKey::V4(u32::from(v4)),
            // The upper 64 bits: the network prefix.
            IpAddr::V6(v6) => ClientKey::V6((u128::from(v6) >> 64) as u64),
        }
    }
}

/// The limits, resolved from `ServerConfig`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpLimits {
    /// Most connections open at once (at least 1).
    pub max: usize,
    /// Most connections per client; 0: no limit.
    pub per_client: usize,
    /// Above this many open connections the shorter idle timeout applies.
    pub high_water: usize,
    /// Idle timeout at or below the high-water mark.
    pub idle_timeout: Duration,
    /// Idle timeout above the high-water mark (≤ `idle_timeout`).
    pub load_idle_timeout: Duration,
}

/// One open connection as the registry sees it.
#[derive(Debug)]
pub(crate) struct Conn {
    id: u64,
    client: ClientKey,
    /// A [`state`] value.
    state: AtomicU8,
    /// When `state` was entered, in milliseconds since the registry's epoch.
    since_ms: AtomicU64,
    /// At least one query answered on this connection.
    answered: AtomicBool,
    /// A [`close`] value; once set, never cleared.
    close: AtomicU8,
    /// Wakes the connection's task when `close` is set.
    wake: Notify,
}

impl Conn {
    fn enter(&self, state: u8, now_ms: u64) {
        self.since_ms.store(now_ms, Ordering::Relaxed);
        self.state.store(state, Ordering::Relaxed);
    }

    fn close_reason(&self) -> u8 {
        self.close.load(Ordering::Acquire)
    }

    fn ask_to_close(&self, reason: u8) {
        // The first reason wins: an evicted connection stays evicted.
        let _ = self
            .close
            .compare_exchange(close::NO, reason, Ordering::AcqRel, Ordering::Acquire);
        self.wake.notify_one();
    }
}

/// Why a new connection was closed at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The client already held `max_tcp_connections_per_client`, every
    /// one mid-message.
    PerClient,
    /// At the cap, and every open connection was mid-message.
    Cap,
}

#[derive(Debug, Default)]
struct Inner {
    conns: HashMap<u64, Arc<Conn>>,
    per_client: HashMap<ClientKey, usize>,
    next_id: u64,
}

impl Inner {
    /// Forgets `id`; the connection itself closes on its own.
    fn remove(&mut self, id: u64) -> Option<Arc<Conn>> {
        let conn = self.conns.remove(&id)?;
        if let Some(count) = self.per_client.get_mut(&conn.client) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_client.remove(&conn.client);
            }
        }
        Some(conn)
    }

    /// The connection to close to make room: the longest idle among those
    /// that never completed a query, else the longest idle, else the
    /// longest-stalled message; only `client`'s connections when given.
    /// `None`: every candidate is mid-message or mid-answer.
    fn victim(&self, now_ms: u64, stalled_ms: u64, client: Option<ClientKey>) -> Option<(u64, u8)> {
        self.conns
            .values()
            .filter(|conn| client.is_none_or(|c| conn.client == c))
            .filter_map(|conn| {
                let since = conn.since_ms.load(Ordering::Relaxed);
                let tier = match conn.state.load(Ordering::Relaxed) {
                    state::IDLE if !conn.answered.load(Ordering::Relaxed) => 0,
                    state::IDLE => 1,
                    state::READING if now_ms.saturating_sub(since) >= stalled_ms => 2,
                    // A client that does not read its answers.
                    state::WRITING if now_ms.saturating_sub(since) >= stalled_ms => 2,
                    _ => return None,
                };
                Some(((tier, since), conn.id))
            })
            .min()
            .map(|((tier, _), id)| (id, if tier == 2 { close::STALLED } else { close::IDLE }))
    }
}

/// The open TCP connections of one server (all its listeners).
#[derive(Debug)]
pub(crate) struct Registry {
    limits: TcpLimits,
    epoch: Instant,
    /// `inner.conns.len()`, readable without the lock.
    open: AtomicUsize,
    last_warning_ms: AtomicU64,
    counters: Arc<TcpCounters>,
    inner: Mutex<Inner>,
}

impl Registry {
    pub(crate) fn new(limits: TcpLimits, counters: Arc<TcpCounters>) -> Registry {
        Registry {
            limits: TcpLimits {
                max: limits.max.max(1),
                load_idle_timeout: limits.load_idle_timeout.min(limits.idle_timeout),
                ..limits
            },
            epoch: Instant::now(),
            open: AtomicUsize::new(0),
            last_warning_ms: AtomicU64::new(0),
            counters,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Nothing panics while holding it; if something did, the map is
        // still consistent enough to keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The idle timeout that applies now, by the current load.
    fn idle_timeout_now(&self) -> Duration {
        if self.open.load(Ordering::Relaxed) > self.limits.high_water {
            self.limits.load_idle_timeout
        } else {
            self.limits.idle_timeout
        }
    }

    /// Bookkeeping for one connection leaving the table.
    fn forget(&self, inner: &mut Inner, id: u64) -> Option<Arc<Conn>> {
        let conn = inner.remove(id)?;
        // Under the lock, as in `admit`, so the gauge never dips below 0.
        self.open.store(inner.conns.len(), Ordering::Relaxed);
        self.counters.open.fetch_sub(1, Ordering::Relaxed);
        Some(conn)
    }

    /// Closes the best candidate (see [`Inner::victim`]), among `client`'s
    /// connections when given; false if none.
    fn evict_locked(&self, inner: &mut Inner, now_ms: u64, client: Option<ClientKey>) -> bool {
        let stalled_ms = u64::try_from(STALLED_MESSAGE.as_millis()).unwrap_or(u64::MAX);
        let Some((id, reason)) = inner.victim(now_ms, stalled_ms, client) else {
            return false;
        };
        if let Some(victim) = self.forget(inner, id) {
            victim.ask_to_close(reason);
            let counter = match client {
                Some(_) => &self.counters.evicted_per_client,
                None => &self.counters.evicted,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// Registers a new connection from `peer`, closing the client's own
    /// longest-idle one when it is at its per-client limit, else the
    /// longest-idle one of all when at the cap.
    pub(crate) fn admit(&self, peer: IpAddr) -> Result<Arc<Conn>, Refused> {
        let client = ClientKey::of(peer);
        let now_ms = self.now_ms();
        let mut inner = self.lock();
        let held = inner.per_client.get(&client).copied().unwrap_or(0);
        let mut evicted_own = false;
        if self.limits.per_client > 0 && held >= self.limits.per_client {
            if !self.evict_locked(&mut inner, now_ms, Some(client)) {
                drop(inner);
                self.counters.refused_per_client.fetch_add(1, Ordering::Relaxed);
                self.warn(
                    now_ms,
                    "a client holds --max-tcp-connections-per-client, all mid-message; closing its new connections",
                );
                return Err(Refused::PerClient);
            }
            evicted_own = true;
        }
        // Closing the client's own connection made room under the cap too.
        let evicted = !evicted_own && inner.conns.len() >= self.limits.max;
        if evicted && !self.evict_locked(&mut inner, now_ms, None) {
            drop(inner);
            self.counters.refused_cap.fetch_add(1, Ordering::Relaxed);
            self.warn(
                now_ms,
                "TCP connection cap reached and no connection is idle; closing new connections",
            );
            return Err(Refused::Cap);
        }
        let id = inner.next_id;
        inner.next_id = inner.next_id.wrapping_add(1);
        let conn = Arc::new(Conn {
            id,
            client,
            state: AtomicU8::new(state::IDLE),
            since_ms: AtomicU64::new(now_ms),
            answered: AtomicBool::new(false),
            close: AtomicU8::new(close::NO),
            wake: Notify::new(),
        });
        inner.conns.insert(id, conn.clone());
        *inner.per_client.entry(client).or_insert(0) += 1;
        self.open.store(inner.conns.len(), Ordering::Relaxed);
        self.counters.open.fetch_add(1, Ordering::Relaxed);
        drop(inner);
        self.counters.accepted.fetch_add(1, Ordering::Relaxed);
        if evicted {
            self.warn(
                now_ms,
                "TCP connection cap reached; closing the longest-idle connections for new ones",
            );
        } else if evicted_own {
            self.warn(
                now_ms,
                "a client holds --max-tcp-connections-per-client; closing its longest-idle connections for its new ones",
            );
        }
        Ok(conn)
    }

    /// Closes the longest-idle connection to free a descriptor; false if
    /// there was none to close.
    fn evict_one(&self) -> bool {
        let now_ms = self.now_ms();
        let mut inner = self.lock();
        self.evict_locked(&mut inner, now_ms, None)
    }

    /// Above the high-water mark, takes `conn` out of the table (it is
    /// about to close for idleness) and returns true. Under the lock, so
    /// connections idle for the same time shed only down to the mark.
    fn shed_if_loaded(&self, conn: &Conn) -> bool {
        let mut inner = self.lock();
        if inner.conns.len() <= self.limits.high_water {
            return false;
        }
        self.forget(&mut inner, conn.id).is_some()
    }

    /// Forgets a connection that ended (no-op if it was evicted).
    fn release(&self, conn: &Conn) {
        let mut inner = self.lock();
        self.forget(&mut inner, conn.id);
    }

    /// Asks every open connection to close (server shutdown): idle ones
    /// close at once, the others after the answer they are writing.
    pub(crate) fn close_all(&self) {
        let inner = self.lock();
        for conn in inner.conns.values() {
            conn.ask_to_close(close::SHUTDOWN);
        }
    }

    fn warn(&self, now_ms: u64, message: &'static str) {
        let last = self.last_warning_ms.load(Ordering::Relaxed);
        if (last != 0 && now_ms.saturating_sub(last) < WARN_INTERVAL_MS)
            || self
                .last_warning_ms
                .compare_exchange(last, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let c = &self.counters;
        tracing::warn!(
            open = self.open.load(Ordering::Relaxed),
            max = self.limits.max,
            per_client = self.limits.per_client,
            evicted_total = c.evicted.load(Ordering::Relaxed),
            evicted_per_client_total = c.evicted_per_client.load(Ordering::Relaxed),
            refused_per_client_total = c.refused_per_client.load(Ordering::Relaxed),
            refused_cap_total = c.refused_cap.load(Ordering::Relaxed),
            "{message}"
        );
    }
}

/// Removes the connection from the registry when its task ends, however
/// it ends.
struct Registered {
    registry: Arc<Registry>,
    conn: Arc<Conn>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.release(&self.conn);
    }
}

/// What the answering side needs.
#[derive(Debug, Clone)]
pub(crate) struct TcpService {
    pub registry: Arc<Registry>,
    pub store: Arc<ZoneStore>,
    pub answer: AnswerConfig,
    pub metrics: Arc<WorkerMetrics>,
}

/// True if octets wait in the socket's receive buffer, whatever tokio's
/// readiness cache says (it may not have seen them yet): a non-blocking peek.
fn input_pending(stream: &TcpStream) -> bool {
    use nix::sys::socket::{recv, MsgFlags};
    use std::os::fd::AsRawFd;
    let mut octet = [0u8; 1];
    matches!(
        recv(stream.as_raw_fd(), &mut octet, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT),
        Ok(n) if n > 0
    )
}

fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(code) if code == nix::errno::Errno::EMFILE as i32 || code == nix::errno::Errno::ENFILE as i32)
}

/// Accepts connections on `listener` forever.
pub(crate) async fn accept_loop(listener: TcpListener, service: TcpService) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                if !out_of_descriptors(&e) {
                    tracing::warn!(error = %e, "TCP accept error");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                } else if service.registry.evict_one() {
                    // Resources ran short (RFC 7766 §6.2.3): a descriptor
                    // frees once the evicted connection's task closes it.
                    let now_ms = service.registry.now_ms();
                    service.registry.warn(
                        now_ms,
                        "out of file descriptors; closing the longest-idle TCP connections",
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                } else {
                    let now_ms = service.registry.now_ms();
                    service
                        .registry
                        .warn(now_ms, "out of file descriptors and no idle TCP connection to close");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        let conn = match service.registry.admit(peer.ip()) {
            Ok(conn) => conn,
            Err(refused) => {
                tracing::debug!(%peer, ?refused, "TCP connection closed at accept");
                drop(stream);
                continue;
            }
        };
        let service = service.clone();
        tokio::spawn(async move {
            let registered = Registered {
                registry: service.registry.clone(),
                conn,
            };
            let mut stream = stream;
            match serve(&mut stream, &registered.conn, &service, peer.ip()).await {
                Ok(end) => tracing::trace!(%peer, ?end, "TCP connection closed"),
                Err(e) => tracing::debug!(error = %e, %peer, "TCP connection ended"),
            }
            // Close the socket before leaving the table, so the count
            // never lags behind the descriptors really held.
            drop(stream);
            drop(registered);
        });
    }
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The client closed it.
    Eof,
    /// Idle for `tcp_idle_timeout`.
    IdleTimeout,
    /// Idle for the shorter timeout above the high-water mark.
    LoadTimeout,
    /// Closed to admit another connection at the cap.
    Evicted,
    /// Server shutdown.
    Shutdown,
    /// A message that is not a query: nothing sensible to say on this stream.
    NotAQuery,
    /// A message's rest did not arrive within the idle timeout.
    MessageTimeout,
    /// The client did not read its answers within the idle timeout (the
    /// shorter one above the high-water mark).
    WriteTimeout,
}

fn end_for(reason: u8) -> End {
    if reason == close::SHUTDOWN {
        End::Shutdown
    } else {
        End::Evicted
    }
}

/// The length of the first message in `input` if it is complete (RFC 1035
/// §4.2.2: a two-octet length, then the message).
fn complete_message(input: &[u8]) -> Option<usize> {
    let (prefix, rest) = input.split_first_chunk::<2>()?;
    let length = usize::from(u16::from_be_bytes(*prefix));
    (rest.len() >= length).then_some(length)
}

/// Writes `output` within `timeout`. The connection is [`state::WRITING`]
/// meanwhile: a write blocked for longer than [`STALLED_MESSAGE`] (a
/// client that does not read) may be chosen for closing at the cap, as a
/// stalled message may, and then ends at once.
async fn write_answers(
    stream: &mut TcpStream,
    output: &mut Vec<u8>,
    timeout: Duration,
    conn: &Conn,
    registry: &Registry,
) -> io::Result<Option<End>> {
    if output.is_empty() {
        return Ok(None);
    }
    conn.enter(state::WRITING, registry.now_ms());
    let write = tokio::time::timeout(timeout, stream.write_all(output));
    tokio::pin!(write);
    let written = loop {
        tokio::select! {
            biased;
            written = &mut write => break written,
            () = conn.wake.notified() => {
                let reason = conn.close_reason();
                if reason == close::STALLED || reason == close::SHUTDOWN {
                    output.clear();
                    return Ok(Some(end_for(reason)));
                }
            }
        }
    };
    conn.enter(state::ANSWERING, registry.now_ms());
    output.clear();
    match written {
        Err(_) => Ok(Some(End::WriteTimeout)),
        Ok(result) => result.map(|()| None),
    }
}

/// Answers the queries of one connection, in order, until it ends.
async fn serve(stream: &mut TcpStream, conn: &Conn, service: &TcpService, peer: IpAddr) -> io::Result<End> {
    let registry = &*service.registry;
    stream.set_nodelay(true)?;
    let mut input: Vec<u8> = Vec::new();
    let mut output: Vec<u8> = Vec::new();
    let mut response: Vec<u8> = Vec::new();
    // When the first octet of the message at the head of `input` arrived.
    let mut reading_since: Option<Instant> = None;
    // Asked to close as idle, the connection answered what was pending.
    let mut last_batch = false;
    loop {
        // Answer every complete message received, in order; several
        // pipelined answers go out in one write.
        if complete_message(&input).is_some() {
            conn.enter(state::ANSWERING, registry.now_ms());
            reading_since = None;
            let snapshot = service.store.load();
            let mut consumed = 0;
            while let Some(length) = complete_message(&input[consumed..]) {
                let started = Instant::now();
                let message = &input[consumed + 2..consumed + 2 + length];
                consumed += 2 + length;
                let result = match answer_or_defer(
                    &snapshot,
                    message,
                    Transport::Tcp,
                    &service.answer,
                    Some(peer),
                    &mut response,
                    true,
                ) {
                    Ok(result) => result,
                    Err(Deferred) => {
                        // A zone transfer or a signed request: several
                        // messages, possibly many; written as they come.
                        let (messages, answered) = crate::xfr::transfer::handle(
                            &service.store,
                            &snapshot,
                            message,
                            peer,
                            Transport::Tcp,
                            &service.answer,
                        );
                        service.metrics.record(&answered, started.elapsed());
                        for message in &messages {
                            let Ok(length) = u16::try_from(message.len()) else {
                                break;
                            };
                            output.extend_from_slice(&length.to_be_bytes());
                            output.extend_from_slice(message);
                            if output.len() >= FLUSH_AT {
                                if let Some(end) =
                                    write_answers(stream, &mut output, registry.idle_timeout_now(), conn, registry)
                                        .await?
                                {
                                    return Ok(end);
                                }
                            }
                        }
                        conn.answered.store(true, Ordering::Relaxed);
                        continue;
                    }
                };
                let Some(answered) = result else {
                    service.metrics.record_dropped();
                    // Not a query: nothing sensible to say on this stream;
                    // the answers to the queries before it still go out.
                    write_answers(stream, &mut output, registry.idle_timeout_now(), conn, registry).await?;
                    return Ok(End::NotAQuery);
                };
                service.metrics.record(&answered, started.elapsed());
                service
                    .metrics
                    .record_kind(crate::query::answer::answer_kind(&response));
                // TCP answers are capped at 65535 octets by `answer`; a
                // longer one would be a bug, and is not sent half-framed.
                let Ok(framed_length) = u16::try_from(response.len()) else {
                    write_answers(stream, &mut output, registry.idle_timeout_now(), conn, registry).await?;
                    return Ok(End::NotAQuery);
                };
                output.extend_from_slice(&framed_length.to_be_bytes());
                output.extend_from_slice(&response);
                conn.answered.store(true, Ordering::Relaxed);
                if output.len() >= FLUSH_AT {
                    if let Some(end) =
                        write_answers(stream, &mut output, registry.idle_timeout_now(), conn, registry).await?
                    {
                        return Ok(end);
                    }
                }
            }
            input.drain(..consumed);
            if let Some(end) = write_answers(stream, &mut output, registry.idle_timeout_now(), conn, registry).await? {
                return Ok(end);
            }
        }

        if input.is_empty() {
            if input.capacity() > KEEP_BUFFER {
                input = Vec::new();
            }
            match idle_wait(stream, &mut input, conn, registry, &mut last_batch).await? {
                Ok(0) => return Ok(End::Eof),
                Ok(_) => continue,
                Err(end) => return Ok(end),
            }
        }

        // Part of a message is here: wait for the rest, for the idle
        // timeout (by the load now) counted from its first octet.
        let began = *reading_since.get_or_insert_with(|| {
            conn.enter(state::READING, registry.now_ms());
            Instant::now()
        });
        let deadline = began + registry.idle_timeout_now();
        let missing = match input.split_first_chunk::<2>() {
            Some((prefix, rest)) => usize::from(u16::from_be_bytes(*prefix)).saturating_sub(rest.len()),
            None => 2 - input.len(),
        };
        input.reserve(missing + READ_CHUNK);
        tokio::select! {
            biased;
            read = stream.read_buf(&mut input) => {
                if read? == 0 {
                    return Ok(End::Eof);
                }
            }
            () = conn.wake.notified() => {
                // Chosen as idle in a race with this message's arrival:
                // finish it first (the idle wait closes afterwards).
                let reason = conn.close_reason();
                if reason == close::STALLED || reason == close::SHUTDOWN {
                    return Ok(end_for(reason));
                }
            }
            () = tokio::time::sleep_until(deadline.into()) => return Ok(End::MessageTimeout),
        }
    }
}

/// Waits between messages: `Ok(n)` once `n` octets arrived (0: the client
/// closed), `Err(end)` when the connection is to close for idleness.
///
/// A connection asked to close as idle first answers a query already in
/// its socket buffer (it raced the choice: an accepted client's first
/// query usually lands right behind the handshake, before its task runs),
/// once; `last_batch` records that this chance was used.
async fn idle_wait(
    stream: &mut TcpStream,
    input: &mut Vec<u8>,
    conn: &Conn,
    registry: &Registry,
    last_batch: &mut bool,
) -> io::Result<Result<usize, End>> {
    let idle_since = Instant::now();
    conn.enter(state::IDLE, registry.now_ms());
    let limits = &registry.limits;
    let deadline = idle_since + limits.idle_timeout;
    // The first look at the load once the shorter timeout has passed, then
    // every LOAD_RECHECK (or the shorter timeout, if less).
    let mut check_at = idle_since + limits.load_idle_timeout;
    input.reserve(READ_CHUNK);
    loop {
        let reason = conn.close_reason();
        if reason != close::NO {
            if reason != close::IDLE || *last_batch || !input_pending(stream) {
                return Ok(Err(end_for(reason)));
            }
            *last_batch = true;
        }
        let wake_at = check_at.min(deadline);
        tokio::select! {
            // Data first: a query that raced an eviction is answered.
            biased;
            read = stream.read_buf(input) => return Ok(Ok(read?)),
            () = conn.wake.notified() => {} // `close` is checked above
            () = tokio::time::sleep_until(wake_at.into()) => {
                if wake_at >= deadline {
                    registry.counters.closed_idle_timeout.fetch_add(1, Ordering::Relaxed);
                    return Ok(Err(End::IdleTimeout));
                }
                if registry.shed_if_loaded(conn) {
                    registry.counters.closed_load_timeout.fetch_add(1, Ordering::Relaxed);
                    return Ok(Err(End::LoadTimeout));
                }
                check_at = wake_at + LOAD_RECHECK.min(limits.load_idle_timeout).max(Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, per_client: usize) -> TcpLimits {
        TcpLimits {
            max,
            per_client,
            high_water: max - max / 4,
            idle_timeout: Duration::from_secs(10),
            load_idle_timeout: Duration::from_millis(2500),
        }
    }

    #[test]
    fn client_key_is_the_ipv4_address_or_the_ipv6_64() {
        let key = |s: &str| ClientKey::of(s.parse().unwrap());
        assert_eq!(key("192.0.2.1"), key("192.0.2.1"));
        assert_ne!(key("192.0.2.1"), key("192.0.2.2"));
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.1"), key("192.0.2.1"));
    }

    #[test]
    fn per_client_limit_counts_a_64_together_and_frees_on_release() {
        let registry = Registry::new(limits(100, 2), Arc::default());
        let a = registry.admit("2001:db8::1".parse().unwrap()).unwrap();
        let b = registry.admit("2001:db8::2".parse().unwrap()).unwrap();
        let other = registry.admit("2001:db8:0:1::1".parse().unwrap()).unwrap();
        a.enter(state::READING, registry.now_ms());
        b.enter(state::ANSWERING, registry.now_ms());
        // Both of the /64's connections mid-message: the new one is closed.
        assert_eq!(
            registry.admit("2001:db8::3".parse().unwrap()).unwrap_err(),
            Refused::PerClient
        );
        registry.release(&a);
        assert!(registry.admit("2001:db8::3".parse().unwrap()).is_ok());
        assert_eq!(registry.counters.refused_per_client.load(Ordering::Relaxed), 1);
        assert_eq!(registry.counters.open.load(Ordering::Relaxed), 3);
        assert_eq!(other.close_reason(), close::NO);
    }

    /// Three connections from `ip`: one answered a query and idle since 0,
    /// one never answered and idle since 5, one answering. Two more
    /// arrive and close, in this order, the never-answered one (though
    /// idle for less) and then the answered one; the busy one never.
    /// Returns the busy one and the first newcomer (now answering).
    fn the_longest_idle_goes_first_and_busy_ones_never(registry: &Registry, ip: IpAddr) -> (Arc<Conn>, Arc<Conn>) {
        let used = registry.admit(ip).unwrap();
        let fresh_old = registry.admit(ip).unwrap();
        let busy = registry.admit(ip).unwrap();
        used.answered.store(true, Ordering::Relaxed);
        used.enter(state::IDLE, 0);
        fresh_old.enter(state::IDLE, 5);
        busy.enter(state::ANSWERING, 0);
        let d = registry.admit(ip).unwrap();
        assert_eq!(fresh_old.close_reason(), close::IDLE);
        assert_eq!(used.close_reason(), close::NO);
        // Next: `used`, once the newcomer `d` is answering.
        d.enter(state::ANSWERING, registry.now_ms());
        let _e = registry.admit(ip).unwrap();
        assert_eq!(used.close_reason(), close::IDLE);
        assert_eq!(busy.close_reason(), close::NO);
        assert_eq!(d.close_reason(), close::NO);
        (busy, d)
    }

    #[test]
    fn at_its_limit_a_client_closes_its_own_longest_idle_connection() {
        let registry = Registry::new(limits(100, 3), Arc::default());
        // Idle for longer than any of the client's, but not the client's
        // to close.
        let someone_else = registry.admit("192.0.2.2".parse().unwrap()).unwrap();
        someone_else.enter(state::IDLE, 0);
        the_longest_idle_goes_first_and_busy_ones_never(&registry, "192.0.2.1".parse().unwrap());
        assert_eq!(someone_else.close_reason(), close::NO);
        let c = &registry.counters;
        assert_eq!(c.evicted_per_client.load(Ordering::Relaxed), 2);
        assert_eq!(c.evicted.load(Ordering::Relaxed), 0);
        assert_eq!(c.refused_per_client.load(Ordering::Relaxed), 0);
        assert_eq!(c.open.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn at_the_cap_the_longest_idle_goes_first_and_busy_ones_never() {
        let registry = Registry::new(limits(3, 0), Arc::default());
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let (busy, _) = the_longest_idle_goes_first_and_busy_ones_never(&registry, ip);
        assert_eq!(registry.counters.evicted.load(Ordering::Relaxed), 2);
        // Every connection mid-message, none stalled: the cap refuses.
        for conn in registry.lock().conns.values() {
            conn.enter(state::READING, registry.now_ms());
        }
        assert_eq!(registry.admit(ip).unwrap_err(), Refused::Cap);
        assert_eq!(busy.close_reason(), close::NO);
        // A message stalled for longer than STALLED_MESSAGE is fair game.
        for conn in registry.lock().conns.values() {
            conn.enter(state::READING, 0);
        }
        let stalled_ms = u64::try_from(STALLED_MESSAGE.as_millis()).unwrap();
        let inner = registry.lock();
        assert!(inner.victim(stalled_ms + 1, stalled_ms, None).is_some());
        assert!(inner.victim(stalled_ms - 1, stalled_ms, None).is_none());
        drop(inner);
        // So is a write blocked that long: a client that does not read.
        for conn in registry.lock().conns.values() {
            conn.enter(state::WRITING, 0);
        }
        let inner = registry.lock();
        assert_eq!(
            inner.victim(stalled_ms + 1, stalled_ms, None).map(|(_, reason)| reason),
            Some(close::STALLED)
        );
        assert!(inner.victim(stalled_ms - 1, stalled_ms, None).is_none());
    }

    #[test]
    fn shedding_stops_at_the_high_water_mark() {
        let registry = Registry::new(limits(4, 0), Arc::default());
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let conns: Vec<_> = (0..4).map(|_| registry.admit(ip).unwrap()).collect();
        // High water is 3: one connection sheds, the others stay.
        let shed: usize = conns.iter().map(|c| usize::from(registry.shed_if_loaded(c))).sum();
        assert_eq!(shed, 1);
        assert_eq!(registry.open.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn complete_message_reads_the_length_prefix() {
        assert_eq!(complete_message(&[]), None);
        assert_eq!(complete_message(&[0]), None);
        assert_eq!(complete_message(&[0, 2, 1]), None);
        assert_eq!(complete_message(&[0, 2, 1, 2]), Some(2));
        assert_eq!(complete_message(&[0, 0]), Some(0));
    }
}
