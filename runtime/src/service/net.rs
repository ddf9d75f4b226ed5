//! The sockets between applications: an abstract Unix socket on the same node (it vanishes
//! with its process, so a killed service leaves no socket file behind) and TCP between
//! nodes, behind one [`Stream`] type.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

/// How long a client waits for a TCP connection before it takes the address as dead.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// `DPS_SERVICE_NET=tcp` makes clients use TCP even where a Unix socket would do.
pub(super) const NET_ENV: &str = "DPS_SERVICE_NET";

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

    /// Small messages leave at once (calls are latency-bound).
    fn tuned(self) -> Stream {
        if let Stream::Tcp(s) = &self {
            let _ = s.set_nodelay(true);
        }
        self
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
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
            Listener::Unix(l) => (Stream::Unix(l.accept()?.0), "a local client".to_string()),
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
            Ok(s) => return Ok(Stream::Unix(s)),
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
