//! A DNS client at a steady rate, for "what does a client see while pods
//! restart": UDP queries each from a fresh socket (a new source port, as
//! a resolver sends them, so no conntrack entry pins it to one pod), TCP
//! queries each on a new connection, every answer checked. Messages are
//! built and parsed by hickory-proto.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_dnsserver::hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use fedns_dnsserver::hickory_proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What to ask and what the answer must be.
#[derive(Clone, Debug)]
pub struct Load {
    /// Where the queries go.
    pub server: SocketAddr,
    /// The owner name asked (type A).
    pub name: String,
    /// The A records every answer must hold, exactly.
    pub expected: BTreeSet<std::net::Ipv4Addr>,
    /// UDP queries per second.
    pub udp_per_second: u32,
    /// TCP queries per second (each on its own connection).
    pub tcp_per_second: u32,
    /// A query not answered within this is a timeout.
    pub timeout: Duration,
}

/// What the client saw, per transport.
#[derive(Debug, Default)]
pub struct Counts {
    pub sent: AtomicUsize,
    pub answered: AtomicUsize,
    pub timeouts: AtomicUsize,
    pub servfail: AtomicUsize,
    /// Any other response code, or addresses other than the expected.
    pub wrong: AtomicUsize,
    /// Refused or reset connections, unreadable replies.
    pub errors: AtomicUsize,
}

impl Counts {
    fn load(&self) -> [usize; 6] {
        [
            self.sent.load(Ordering::Relaxed),
            self.answered.load(Ordering::Relaxed),
            self.timeouts.load(Ordering::Relaxed),
            self.servfail.load(Ordering::Relaxed),
            self.wrong.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        ]
    }

    /// Queries that did not get the expected answer.
    pub fn failed(&self) -> usize {
        let [_, _, timeouts, servfail, wrong, errors] = self.load();
        timeouts + servfail + wrong + errors
    }

    /// `sent N, answered N, timeouts N, SERVFAIL N, wrong N, errors N`.
    pub fn line(&self) -> String {
        let [sent, answered, timeouts, servfail, wrong, errors] = self.load();
        format!("sent {sent}, answered {answered}, timeouts {timeouts}, SERVFAIL {servfail}, wrong {wrong}, errors {errors}")
    }
}

/// The counts of a run, and the first few failures as text.
#[derive(Debug, Default)]
pub struct Report {
    pub udp: Counts,
    pub tcp: Counts,
    pub first_failures: std::sync::Mutex<Vec<String>>,
}

impl Report {
    fn note(&self, what: String) {
        let mut failures = self.first_failures.lock().unwrap();
        if failures.len() < 10 {
            failures.push(what);
        }
    }
}

/// A running load; [`Running::stop`] ends it and returns the report.
pub struct Running {
    report: Arc<Report>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    started: Instant,
}

impl Running {
    /// Stops sending, waits for the queries in flight, and reports.
    pub async fn stop(self) -> (Arc<Report>, Duration) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        (self.report, self.started.elapsed())
    }
}

static NEXT_ID: AtomicU16 = AtomicU16::new(1);

fn query(name: &str) -> (u16, Vec<u8>) {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = false;
    message.add_query(Query::query(
        Name::from_ascii(name).expect("a valid name"),
        RecordType::A,
    ));
    (id, message.to_vec().expect("a query encodes"))
}

/// Sorts one reply into `counts`.
fn judge(load: &Load, report: &Report, counts: &Counts, transport: &str, id: u16, reply: &[u8]) {
    let message = match Message::from_vec(reply) {
        Ok(m) if m.metadata.id == id => m,
        Ok(m) => {
            counts.errors.fetch_add(1, Ordering::Relaxed);
            report.note(format!("{transport}: reply for ID {} to query {id}", m.metadata.id));
            return;
        }
        Err(e) => {
            counts.errors.fetch_add(1, Ordering::Relaxed);
            report.note(format!("{transport}: unreadable reply: {e}"));
            return;
        }
    };
    let code = message.metadata.response_code;
    if code == ResponseCode::ServFail {
        counts.servfail.fetch_add(1, Ordering::Relaxed);
        report.note(format!("{transport}: SERVFAIL"));
        return;
    }
    let got: BTreeSet<std::net::Ipv4Addr> = message
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect();
    if code != ResponseCode::NoError || got != load.expected {
        counts.wrong.fetch_add(1, Ordering::Relaxed);
        report.note(format!("{transport}: {code:?} {got:?}, expected {:?}", load.expected));
        return;
    }
    counts.answered.fetch_add(1, Ordering::Relaxed);
}

async fn udp_once(load: Arc<Load>, report: Arc<Report>) {
    let counts = &report.udp;
    counts.sent.fetch_add(1, Ordering::Relaxed);
    let (id, packet) = query(&load.name);
    let bind: SocketAddr = if load.server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }
        .parse()
        .unwrap();
    let socket = match tokio::net::UdpSocket::bind(bind).await {
        Ok(s) => s,
        Err(e) => {
            counts.errors.fetch_add(1, Ordering::Relaxed);
            report.note(format!("udp: bind: {e}"));
            return;
        }
    };
    let exchange = async {
        socket.send_to(&packet, load.server).await?;
        let mut buf = vec![0u8; 4096];
        loop {
            let (len, from) = socket.recv_from(&mut buf).await?;
            if from == load.server {
                return Ok::<_, std::io::Error>(buf[..len].to_vec());
            }
        }
    };
    match tokio::time::timeout(load.timeout, exchange).await {
        Ok(Ok(reply)) => judge(&load, &report, counts, "udp", id, &reply),
        Ok(Err(e)) => {
            counts.errors.fetch_add(1, Ordering::Relaxed);
            report.note(format!("udp: {e}"));
        }
        Err(_) => {
            counts.timeouts.fetch_add(1, Ordering::Relaxed);
            report.note(format!("udp: no answer within {:?}", load.timeout));
        }
    }
}

async fn tcp_once(load: Arc<Load>, report: Arc<Report>) {
    let counts = &report.tcp;
    counts.sent.fetch_add(1, Ordering::Relaxed);
    let (id, packet) = query(&load.name);
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(load.server).await?;
        // RFC 1035 §4.2.2: two octets of length, then the message.
        let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&packet);
        stream.write_all(&framed).await?;
        let length = stream.read_u16().await?;
        let mut reply = vec![0u8; usize::from(length)];
        stream.read_exact(&mut reply).await?;
        Ok::<_, std::io::Error>(reply)
    };
    match tokio::time::timeout(load.timeout, exchange).await {
        Ok(Ok(reply)) => judge(&load, &report, counts, "tcp", id, &reply),
        Ok(Err(e)) => {
            counts.errors.fetch_add(1, Ordering::Relaxed);
            report.note(format!("tcp: {e}"));
        }
        Err(_) => {
            counts.timeouts.fetch_add(1, Ordering::Relaxed);
            report.note(format!("tcp: no answer within {:?}", load.timeout));
        }
    }
}

/// One UDP query: the response code and the A records, or why none came.
pub async fn ask(server: SocketAddr, name: &str) -> Result<(ResponseCode, BTreeSet<std::net::Ipv4Addr>), String> {
    let (id, packet) = query(name);
    let bind: SocketAddr = if server.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().unwrap();
    let socket = tokio::net::UdpSocket::bind(bind).await.map_err(|e| e.to_string())?;
    socket.send_to(&packet, server).await.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 4096];
    let (len, _) = tokio::time::timeout(Duration::from_secs(2), socket.recv_from(&mut buf))
        .await
        .map_err(|_| "no answer within 2 s".to_owned())?
        .map_err(|e| e.to_string())?;
    let message = Message::from_vec(&buf[..len]).map_err(|e| e.to_string())?;
    if message.metadata.id != id {
        return Err(format!("reply for ID {}", message.metadata.id));
    }
    let got = message
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect();
    Ok((message.metadata.response_code, got))
}

/// Sends `per_second` queries a second with `once` until stopped; each
/// query is its own task, so a slow one delays no other.
fn pace<F, Fut>(per_second: u32, mut stop: tokio::sync::watch::Receiver<bool>, once: F) -> tokio::task::JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        if per_second == 0 {
            return;
        }
        let mut ticker = tokio::time::interval(Duration::from_secs(1) / per_second);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut in_flight = Vec::new();
        loop {
            tokio::select! {
                _ = ticker.tick() => in_flight.push(tokio::spawn(once())),
                _ = stop.changed() => break,
            }
            in_flight.retain(|t: &tokio::task::JoinHandle<()>| !t.is_finished());
        }
        for task in in_flight {
            let _ = task.await;
        }
    })
}

/// Starts the load.
pub fn start(load: Load) -> Running {
    let load = Arc::new(load);
    let report = Arc::new(Report::default());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let udp = {
        let (load, report) = (load.clone(), report.clone());
        pace(load.udp_per_second, stopped.clone(), move || {
            udp_once(load.clone(), report.clone())
        })
    };
    let tcp = {
        let (load, report) = (load.clone(), report.clone());
        pace(load.tcp_per_second, stopped, move || {
            tcp_once(load.clone(), report.clone())
        })
    };
    Running {
        report,
        stop,
        tasks: vec![udp, tcp],
        started: Instant::now(),
    }
}
