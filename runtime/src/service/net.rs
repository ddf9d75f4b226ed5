//! The sockets between applications: an abstract Unix socket on the same node (it vanishes
//! with its process, so a killed service leaves no socket file behind) and TCP between
//! nodes, behind one [`Stream`] type.
//!
//! A read that finds nothing polls the socket briefly before it blocks
//! ([`Stream::poll_readable`], as idle workers poll their queue: a thread that sleeps in the
//! kernel costs a wake-up of several µs per message), and a reply can be sent without
//! blocking ([`Stream::send_nonblocking`]) from the thread that completed its call.

use std::io::{IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use crate::activity;

/// How long a client waits for a TCP connection before it takes the address as dead.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// `DPS_SERVICE_NET=tcp` makes clients use TCP even where a Unix socket would do (`unix`,
/// or unset: a Unix socket where the service is on this node).
pub(super) const NET_ENV: &str = "DPS_SERVICE_NET";

/// Checks [`NET_ENV`]: unset, `tcp` or `unix`.
///
/// # Errors
/// A [`ErrorKind::Usage`](crate::ErrorKind::Usage) naming the variable and its value.
pub(crate) fn check_net_setting() -> Result<(), crate::Error> {
    match std::env::var(NET_ENV) {
        Ok(v) if v != "tcp" && v != "unix" => Err(crate::Error::new(
            crate::ErrorKind::Usage,
            format!("{NET_ENV}=\"{v}\": give tcp (clients use TCP even on the service's node) or unix (the default)"),
        )),
        _ => Ok(()),
    }
}

/// How many times a reader polls its socket, yielding the core between polls, before it
/// blocks in a read (as many as an idle worker polls its queue, `engine::recv_eagerly`).
const EAGER_POLLS: u32 = 200;

/// A connection between a client and a service.
#[derive(Debug)]
pub(super) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(super) fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    /// Ends the connection both ways: a thread blocked reading it returns.
    pub(super) fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }

    pub(super) fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }

    /// Small messages leave at once (calls are latency-bound). The socket buffers keep their
    /// defaults: 4 MiB ones (`SO_SNDBUF`) were tried for 1 MiB replies and gained nothing
    /// measurable here (a small buffer stays in cache between the writer's copy and the
    /// reader's).
    fn tuned(self) -> Stream {
        if let Stream::Tcp(s) = &self {
            let _ = s.set_nodelay(true);
        }
        self
    }

    fn fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }

    /// Spins until a read would not block (data, the end of the connection, or an error is
    /// there: true) for [`SPIN`] (not after [`SPIN_MISSES`] spins in a row that found
    /// nothing, for [`SPIN_PAUSE`] reads), then polls, yielding the core between polls, at most [`EAGER_POLLS`] times, and not
    /// beyond a yield that finds the core busy (`activity::yield_core`): false, and the
    /// caller's read blocks. Every read of a [`Stream`] that finds nothing calls it: it saves
    /// the reader's wake-up when the data comes within a few hundred µs (a reply to a call
    /// just made, the next request of a client, the rest of a large reply).
    fn poll_readable(&self) -> bool {
        spin_readable(self.fd()) || poll_readable_with(self.fd(), activity::yield_core)
    }

    /// Whether a read would not block now (data, the end of the connection, or an error is
    /// there), asked without waiting.
    pub(super) fn readable_now(&self) -> bool {
        poll_fd(self.fd(), 0) > 0
    }

    /// Waits until a read would not block: polls briefly ([`Stream::poll_readable`]), then
    /// sleeps in `poll(2)` (a connection's reader thread, which reads nothing itself while it
    /// waits, so a waiting caller may read the socket meanwhile).
    pub(super) fn wait_readable(&self) {
        if !self.poll_readable() {
            poll_fd(self.fd(), -1);
        }
    }

    /// Writes as much of `bufs` as the socket takes without blocking; `Ok(0)` if it takes
    /// nothing now. Never raises SIGPIPE (a closed peer is an error).
    pub(super) fn send_nonblocking(&self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        // SAFETY: an all-zero `msghdr` is valid (no address, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = bufs.as_ptr().cast_mut().cast();
        msg.msg_iovlen = bufs.len().min(libc::UIO_MAXIOV as usize) as _;
        loop {
            // SAFETY: `IoSlice` is ABI-compatible with `iovec` (std guarantees it on Unix),
            // and each points into memory borrowed for this call; the kernel only reads it.
            let n = unsafe { libc::sendmsg(self.fd(), &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::WouldBlock => return Ok(0),
                std::io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        }
    }
}

/// How long a reader spins (polls without yielding the core) before it polls with yields:
/// a message that comes within it costs neither a yield (a context switch when another
/// thread waits for the core) nor a wake-up. 20 µs: a service's round trip on one node.
const SPIN: Duration = Duration::from_micros(20);

/// After this many spins in a row that found nothing, a reader does not spin for
/// [`SPIN_PAUSE`] reads: where messages come slower than a spin, spinning only burns the core.
const SPIN_MISSES: u32 = 4;
const SPIN_PAUSE: u32 = 64;

thread_local! {
    /// This reader's spins in a row that found nothing (beyond [`SPIN_MISSES`]: reads left
    /// without spinning).
    static MISSED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Spins on `fd` for [`SPIN`] (unless recent spins found nothing): true if it became
/// readable.
fn spin_readable(fd: RawFd) -> bool {
    let missed = MISSED.get();
    if missed >= SPIN_MISSES {
        MISSED.set(if missed >= SPIN_MISSES + SPIN_PAUSE { 0 } else { missed + 1 });
        return false;
    }
    let start = std::time::Instant::now();
    loop {
        if poll_fd(fd, 0) != 0 {
            MISSED.set(0);
            return true;
        }
        if start.elapsed() >= SPIN {
            MISSED.set(missed + 1);
            return false;
        }
        std::hint::spin_loop();
    }
}

/// One `poll(2)` of `fd` for reading, waiting at most `timeout_ms` (-1: for ever): what
/// `poll` returns (1: a read would not block; 0: timed out; -1: `poll` failed).
fn poll_fd(fd: RawFd, timeout_ms: i32) -> i32 {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid `pollfd`, exclusively borrowed.
    unsafe { libc::poll(&mut p, 1, timeout_ms) }
}

/// [`Stream::poll_readable`] on `fd`, with the yield between polls given (the tests count
/// them): `yield_core` returns false when the core is busy.
fn poll_readable_with(fd: RawFd, mut yield_core: impl FnMut() -> bool) -> bool {
    for _ in 0..EAGER_POLLS {
        if poll_fd(fd, 0) != 0 {
            return true;
        }
        if !yield_core() {
            break;
        }
    }
    false
}

impl Read for Stream {
    /// Takes what is there without blocking; if nothing is, polls a little
    /// ([`Stream::poll_readable`]), then blocks. So a message, or the rest of a large one,
    /// that comes within a few hundred µs costs the reader no wake-up.
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // SAFETY: `buf` is valid for writes of its length and exclusively borrowed; the
        // descriptor is this stream's own.
        let n = unsafe { libc::recv(self.fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        if !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) {
            return Err(e);
        }
        self.poll_readable();
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tcp(s) => s.write_vectored(bufs),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A listening socket of a service's gateway.
pub(super) enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

impl Listener {
    /// Listens on the abstract Unix socket `name`.
    pub(super) fn unix(name: &str) -> std::io::Result<Listener> {
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
        Ok(Listener::Unix(UnixListener::bind_addr(&addr)?))
    }

    /// Listens on a free TCP port of every interface.
    pub(super) fn tcp() -> std::io::Result<Listener> {
        Ok(Listener::Tcp(TcpListener::bind("0.0.0.0:0")?))
    }

    pub(super) fn accept(&self) -> std::io::Result<(Stream, String)> {
        Ok(match self {
            Listener::Unix(l) => (Stream::Unix(l.accept()?.0).tuned(), "a local client".to_string()),
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                (Stream::Tcp(s).tuned(), format!("client {peer}"))
            }
        })
    }

    /// The TCP port, if a TCP listener.
    pub(super) fn port(&self) -> Option<u16> {
        match self {
            Listener::Tcp(l) => l.local_addr().ok().map(|a| a.port()),
            Listener::Unix(_) => None,
        }
    }
}

/// Connects to the abstract Unix socket `name`, whatever `DPS_SERVICE_NET` says: a stopping
/// service wakes its own accept with it.
pub(super) fn connect_unix(name: &str) -> std::io::Result<UnixStream> {
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    UnixStream::connect_addr(&addr)
}

/// Connects to the first address that answers: the abstract Unix socket `unix` (unless
/// `DPS_SERVICE_NET=tcp`), then each of `tcp` in order. The error names every address tried.
pub(super) fn connect(unix: Option<&str>, tcp: &[String]) -> Result<Stream, String> {
    let mut tried = Vec::new();
    let tcp_only = std::env::var(NET_ENV).is_ok_and(|v| v == "tcp");
    if let (Some(name), false) = (unix, tcp_only) {
        match connect_unix(name) {
            Ok(s) => return Ok(Stream::Unix(s).tuned()),
            Err(e) => tried.push(format!("unix @{name}: {e}")),
        }
    }
    for addr in tcp {
        let attempt = addr
            .parse::<SocketAddr>()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
            .and_then(|a| TcpStream::connect_timeout(&a, CONNECT_TIMEOUT));
        match attempt {
            Ok(s) => return Ok(Stream::Tcp(s).tuned()),
            Err(e) => tried.push(format!("tcp {addr}: {e}")),
        }
    }
    if tried.is_empty() {
        tried.push("no address".into());
    }
    Err(tried.join("; "))
}

/// This host's IPv4 addresses with `port`, `ip:port`: the interfaces' own first (another
/// node reaches the service there), loopback last.
pub(super) fn tcp_addresses(port: u16) -> Vec<String> {
    let mut own = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list that stays valid until freeifaddrs;
    // each node's `ifa_addr` is null or points to a sockaddr of the family it names, and an
    // AF_INET one is a sockaddr_in.
    unsafe {
        if libc::getifaddrs(&mut list) == 0 {
            let mut at = list;
            while !at.is_null() {
                let addr = (*at).ifa_addr;
                if !addr.is_null() && i32::from((*addr).sa_family) == libc::AF_INET {
                    let sin = &*(addr as *const libc::sockaddr_in);
                    let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                    if !ip.is_loopback() {
                        own.push(format!("{ip}:{port}"));
                    }
                }
                at = (*at).ifa_next;
            }
            libc::freeifaddrs(list);
        }
    }
    own.push(format!("127.0.0.1:{port}"));
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_polls_until_data_comes_and_blocks_on_a_busy_core() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, mut b) = (Stream::Unix(a), Stream::Unix(b));
        // A free core: polls until the message comes (sent at the 10th yield).
        let mut yields = 0;
        let ready = poll_readable_with(a.fd(), || {
            yields += 1;
            if yields == 10 {
                b.write_all(b"x").unwrap();
            }
            true
        });
        assert_eq!((ready, yields), (true, 10));
        assert_eq!(a.try_clone().unwrap().read(&mut [0u8; 4]).unwrap(), 1);
        // A busy core: one poll, then the caller blocks in its read.
        let mut yields = 0;
        assert!(!poll_readable_with(a.fd(), || {
            yields += 1;
            false
        }));
        assert_eq!(yields, 1);
        // Nothing comes: every poll is made.
        let mut yields = 0;
        assert!(!poll_readable_with(a.fd(), || {
            yields += 1;
            true
        }));
        assert_eq!(yields, EAGER_POLLS);
        // The peer is gone: ready at once (the read says so).
        drop(b);
        assert!(poll_readable_with(a.fd(), || panic!("no yield needed")));
    }

    #[test]
    fn a_nonblocking_send_takes_what_fits_and_a_closed_peer_is_an_error() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, mut b) = (Stream::Unix(a).tuned(), Stream::Unix(b));
        let data: Vec<u8> = (0..64u32 << 20).map(|i| i as u8).collect();
        let mut sent = 0;
        while sent < data.len() {
            match a.send_nonblocking(&[IoSlice::new(&data[sent..])]).unwrap() {
                0 => break,
                n => sent += n,
            }
        }
        assert!(sent > 0 && sent < data.len(), "the socket takes part of 64 MiB: {sent}");
        let mut back = vec![0u8; sent];
        b.read_exact(&mut back).unwrap();
        assert!(back == data[..sent]);
        drop(b);
        assert!(a.send_nonblocking(&[IoSlice::new(b"x")]).is_err(), "no SIGPIPE, an error");
    }
}
