//! The messages between a service's clients and its gateway, on a socket. A message is
//! `u32 header_len, header (bincode Msg), u8 has_token, [u32 len, token bytes, u16 nbulk,
//! nbulk x (u8 kind, u64 count), then each bulk's raw bytes]`: the bulks of a token are
//! written from the token's own memory and read straight into the vectors the decoded token
//! keeps, so a large reply is not copied on its way through the socket; a message leaves in
//! one vectored write ([`Outgoing`]) where the socket takes it.
//!
//! On one node a large bulk of a reply can be **lent** instead ([`Outgoing::lending`]):
//! its shape entry has the kind's high bit set and the bulk's address in the service's
//! memory instead of bytes in the stream, and the client copies it from there straight into
//! the vector the decoded token keeps ([`Lender`], `process_vm_readv`): one copy, against two
//! through a socket. The service keeps the reply until the client says it has it (`Taken`).
//!
//! Every length read is checked against a limit before anything is allocated, and every
//! malformed or truncated message is an error (the connection is then dropped), never a panic;
//! so is a lent bulk that cannot be read whole at the address the peer gave.

use std::io::{IoSlice, Read, Write};

use serde::{Deserialize, Serialize};

use crate::bulk_vec::BulkVec;
use crate::pool;
use crate::token::Token;
use crate::wire::WireToken;

/// The largest header a peer may send (a type name, an error message).
const MAX_HEADER: usize = 1 << 20;
/// The largest token, encoded bytes and bulks together (1 GiB).
const MAX_TOKEN: usize = 1 << 30;
/// The flag on a bulk's kind byte that says the bulk is lent: its address follows.
const LENT: u8 = 0x80;

/// What a client and a service say to each other.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) enum Msg {
    /// Client to service, first: what the client expects.
    Hello {
        protocol: u32,
        service: String,
        request: String,
        reply: String,
        /// The graph fingerprint the client pinned, if any.
        fingerprint: Option<String>,
        /// Who the client is, for the service's log lines.
        client: String,
    },
    /// Service to client: the types agree; the graph behind the name, and, on a Unix
    /// socket, an offer to lend large bulks ([`Probe`]).
    Welcome { graph: String, fingerprint: String, lend: Option<Probe> },
    /// Service to client: the types or fingerprint differ (`reason` names both sides).
    Refused { reason: String },
    /// Client to service: a call, tagged `id`; the request token follows.
    Request { id: u64 },
    /// Service to client: the output of call `id`; the reply token follows.
    Reply { id: u64 },
    /// Service to client: call `id` failed.
    Failed { id: u64, message: String },
    /// Client to service, after a `Welcome` that offered to lend: the client read the probe,
    /// so lend it the large bulks of later replies.
    Borrow,
    /// Service to client: the output of call `id`, with some of its bulks lent.
    Lent { id: u64 },
    /// Client to service: the lent bulks of call `id` are copied; the service may drop them.
    Taken { id: u64 },
}

/// A service's offer to lend bulks: the client reads the 8 bytes at `addr` in process
/// `pid`, and lending works if it finds `value` there (and not if the two processes do not
/// see the same pids, or the client may not read the service's memory).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub(crate) struct Probe {
    pub(crate) pid: u32,
    pub(crate) addr: u64,
    pub(crate) value: u64,
}

/// This process's probe value, at a fixed address for its lifetime.
pub(crate) fn probe() -> Probe {
    static VALUE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let value = VALUE.get_or_init(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
        (t ^ (u64::from(std::process::id()) << 40)) | 1
    });
    Probe { pid: std::process::id(), addr: std::ptr::from_ref(value) as u64, value: *value }
}

/// Copies lent bulks out of a service's memory (`process_vm_readv`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lender {
    pid: libc::pid_t,
}

impl Lender {
    /// Tries `probe`: a lender if its value is read back.
    pub(crate) fn try_probe(probe: &Probe) -> Option<Lender> {
        let lender = Lender { pid: libc::pid_t::try_from(probe.pid).ok()? };
        let mut back = [0u8; 8];
        lender.copy(&mut back, probe.addr).ok()?;
        (u64::from_ne_bytes(back) == probe.value).then_some(lender)
    }

    /// Fills `dst` from the service's memory at `addr`; an error unless all of it was read.
    fn copy(&self, dst: &mut [u8], addr: u64) -> std::io::Result<()> {
        let mut done = 0;
        while done < dst.len() {
            let local = libc::iovec { iov_base: dst[done..].as_mut_ptr().cast(), iov_len: dst.len() - done };
            let remote =
                libc::iovec { iov_base: (addr as usize + done) as *mut libc::c_void, iov_len: dst.len() - done };
            // SAFETY: `local` is the unread part of `dst`, valid for writes and exclusively
            // borrowed; the kernel checks `remote` against the other process's mappings
            // (a bad address is an error, never a write here).
            let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
            if n <= 0 {
                let e = if n == 0 { std::io::ErrorKind::UnexpectedEof.into() } else { std::io::Error::last_os_error() };
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                if e.raw_os_error() == Some(libc::ESRCH) {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "the service's process is gone",
                    ));
                }
                return Err(bad(format!("a lent bulk of {} bytes that cannot be read at {addr:#x}: {e}", dst.len())));
            }
            done += n as usize;
        }
        Ok(())
    }
}

/// A reply's bulks of at least this many bytes are lent, where the client borrows
/// ([`Outgoing::lending`]).
pub(crate) const LEND_MIN: usize = 64 << 10;

/// Writes `msg` and `token` to `w`, blocking until all is written.
pub(crate) fn write(w: &mut impl Write, msg: &Msg, token: Option<WireToken>) -> std::io::Result<()> {
    Outgoing::new(msg, token).write_all(w)
}

/// A message ready to go: its head (the lengths, the header, the token's bytes and its bulks'
/// shapes) and the token, whose bulks are written from its own memory after the head, all
/// in one vectored write where the socket takes it. It can be written in parts: what was
/// written is remembered, so that a thread that could not finish it without blocking hands
/// the rest to another.
pub(crate) struct Outgoing {
    head: Vec<u8>,
    token: Option<WireToken>,
    /// The bytes written so far.
    sent: usize,
}

/// The most buffers a vectored write takes (Linux's `UIO_MAXIOV`): a token with more bulks
/// is written in several.
const MAX_SLICES: usize = 1024;

impl Outgoing {
    /// Lays out `msg` and `token`.
    pub(crate) fn new(msg: &Msg, token: Option<WireToken>) -> Outgoing {
        let header = bincode::serialize(msg).expect("dps: a service message encodes");
        let mut head = Vec::with_capacity(16 + header.len() + token.as_ref().map_or(0, |t| t.bytes.len() + 16));
        head.extend_from_slice(&(header.len() as u32).to_le_bytes());
        head.extend_from_slice(&header);
        let Some(t) = &token else {
            head.push(0);
            return Outgoing { head, token, sent: 0 };
        };
        head.push(1);
        head.extend_from_slice(&(t.bytes.len() as u32).to_le_bytes());
        head.extend_from_slice(&t.bytes);
        head.extend_from_slice(&((t.bulks_out.len() + t.bulks_in.len()) as u16).to_le_bytes());
        for b in &t.bulks_out {
            head.push(b.kind);
            head.extend_from_slice(&(b.count as u64).to_le_bytes());
        }
        for b in &t.bulks_in {
            head.push(b.kind());
            head.extend_from_slice(&(b.count() as u64).to_le_bytes());
        }
        Outgoing { head, token, sent: 0 }
    }

    /// The reply to call `id`, `token`, with its bulks of at least `min` bytes lent (their
    /// addresses written instead of their bytes, the smaller ones copied after the head):
    /// `Msg::Lent` and the token, which must be kept until the client has taken them. A
    /// plain `Msg::Reply` (and no token) if no bulk is that large.
    pub(crate) fn lending(id: u64, token: WireToken, min: usize) -> (Outgoing, Option<WireToken>) {
        // SAFETY: as in `unsent`: `token.keep` owns what `bulks_out` points into.
        let bulks: Vec<(u8, usize, &[u8])> = token
            .bulks_out
            .iter()
            .map(|b| (b.kind, b.count, unsafe { std::slice::from_raw_parts(b.ptr, b.len) }))
            .chain(token.bulks_in.iter().map(|b| (b.kind(), b.count(), b.as_bytes())))
            .collect();
        if bulks.iter().all(|b| b.2.len() < min) {
            return (Outgoing::new(&Msg::Reply { id }, Some(token)), None);
        }
        let header = bincode::serialize(&Msg::Lent { id }).expect("dps: a service message encodes");
        let mut head = Vec::with_capacity(32 + header.len() + token.bytes.len() + 17 * bulks.len());
        head.extend_from_slice(&(header.len() as u32).to_le_bytes());
        head.extend_from_slice(&header);
        head.push(1);
        head.extend_from_slice(&(token.bytes.len() as u32).to_le_bytes());
        head.extend_from_slice(&token.bytes);
        head.extend_from_slice(&(bulks.len() as u16).to_le_bytes());
        for &(kind, count, bytes) in &bulks {
            let lent = bytes.len() >= min;
            head.push(if lent { kind | LENT } else { kind });
            head.extend_from_slice(&(count as u64).to_le_bytes());
            if lent {
                head.extend_from_slice(&(bytes.as_ptr() as u64).to_le_bytes());
            }
        }
        for &(_, _, bytes) in bulks.iter().filter(|b| b.2.len() < min) {
            head.extend_from_slice(bytes);
        }
        drop(bulks);
        (Outgoing { head, token: None, sent: 0 }, Some(token))
    }

    /// Its size in bytes, head and bulks.
    pub(crate) fn bytes(&self) -> usize {
        let bulks = self.token.as_ref().map_or(0, |t| {
            t.bulks_out.iter().map(|b| b.len).sum::<usize>()
                + t.bulks_in.iter().map(|b| b.as_bytes().len()).sum::<usize>()
        });
        self.head.len() + bulks
    }

    /// True once every byte is written.
    pub(crate) fn is_done(&self) -> bool {
        self.unsent().is_empty()
    }

    /// The parts not yet written (at most [`MAX_SLICES`] of them).
    pub(crate) fn unsent(&self) -> Vec<IoSlice<'_>> {
        let mut parts: Vec<&[u8]> = vec![self.head.as_slice()];
        if let Some(t) = &self.token {
            // SAFETY: `t.keep` owns the memory each `bulks_out` entry points into and is
            // alive while `t` is borrowed here (see `wire::WireToken`).
            parts.extend(t.bulks_out.iter().map(|b| unsafe { std::slice::from_raw_parts(b.ptr, b.len) }));
            parts.extend(t.bulks_in.iter().map(|b| b.as_bytes()));
        }
        let mut skip = self.sent;
        let mut slices = Vec::new();
        for part in parts {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            slices.push(IoSlice::new(&part[skip..]));
            skip = 0;
            if slices.len() == MAX_SLICES {
                break;
            }
        }
        slices
    }

    /// Records that `n` more bytes were written.
    pub(crate) fn advance(&mut self, n: usize) {
        self.sent += n;
    }

    /// Writes the rest to `w`, blocking until all is written.
    pub(crate) fn write_all(&mut self, w: &mut impl Write) -> std::io::Result<()> {
        loop {
            let written = {
                let slices = self.unsent();
                if slices.is_empty() {
                    return w.flush();
                }
                w.write_vectored(&slices)
            };
            match written {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => self.advance(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Reads one message, copying its lent bulks with `lender` (none: a lent bulk is
/// malformed). `Ok(None)`: the peer closed the connection between messages.
///
/// # Errors
/// A read error, a truncated message, one that breaks the format or its limits, or a lent
/// bulk that cannot be read whole.
pub(crate) fn read(r: &mut impl Read, lender: Option<&Lender>) -> std::io::Result<Option<(Msg, Option<WireToken>)>> {
    let mut len = [0u8; 4];
    // Nothing at all is a connection closed between messages; part of a length is a cut.
    loop {
        match r.read(&mut len[..1]) {
            Ok(0) => return Ok(None),
            Ok(_) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    r.read_exact(&mut len[1..]).map_err(truncated)?;
    let hlen = u32::from_le_bytes(len) as usize;
    if hlen > MAX_HEADER {
        return Err(bad(format!("a header of {hlen} bytes (at most {MAX_HEADER})")));
    }
    let header = read_vec(r, hlen)?;
    let msg: Msg = bincode::deserialize(&header).map_err(|e| bad(format!("a header that does not decode: {e}")))?;
    if read_vec(r, 1)?[0] == 0 {
        return Ok(Some((msg, None)));
    }
    let plen = u32::from_le_bytes(read_array(r)?) as usize;
    if plen > MAX_TOKEN {
        return Err(bad(format!("a token of {plen} bytes (at most {MAX_TOKEN})")));
    }
    let bytes = read_vec(r, plen)?;
    let nbulk = u16::from_le_bytes(read_array(r)?);
    let mut total = plen;
    let mut shapes = Vec::with_capacity(nbulk as usize);
    for _ in 0..nbulk {
        let mut kind = read_vec(r, 1)?[0];
        let count = u64::from_le_bytes(read_array(r)?);
        let lent = if kind & LENT != 0 {
            kind &= !LENT;
            if lender.is_none() {
                return Err(bad("a lent bulk where none was agreed".into()));
            }
            Some(u64::from_le_bytes(read_array(r)?))
        } else {
            None
        };
        let size = BulkVec::elem_size(kind).ok_or_else(|| bad(format!("a bulk of unknown kind {kind}")))?;
        let len = usize::try_from(count).ok().and_then(|c| c.checked_mul(size));
        total = len
            .and_then(|l| total.checked_add(l))
            .filter(|&t| t <= MAX_TOKEN)
            .ok_or_else(|| bad(format!("bulks of more than {MAX_TOKEN} bytes")))?;
        shapes.push((kind, count as usize, lent));
    }
    let mut bulks_in = Vec::with_capacity(shapes.len());
    for &(kind, count, lent) in &shapes {
        let mut v = pool::alloc(kind, count).expect("dps: a checked bulk kind");
        if lent.is_none() {
            r.read_exact(v.as_bytes_mut()).map_err(truncated)?;
        }
        bulks_in.push(v);
    }
    // The stream's part of the message is read whole before any lent bulk is copied.
    for (v, &(.., lent)) in bulks_in.iter_mut().zip(&shapes) {
        if let (Some(addr), Some(lender)) = (lent, lender) {
            lender.copy(v.as_bytes_mut(), addr)?;
        }
    }
    Ok(Some((msg, Some(WireToken { bytes, bulks_out: Vec::new(), bulks_in, lends: false, keep: None }))))
}

/// Decodes a received token as `T`, or says why it does not decode (never panics: the
/// token comes from another program).
pub(crate) fn decode<T: Token>(wire: WireToken) -> Result<T, String> {
    let bytes = &wire.bytes;
    crate::bulk_vec::stage_incoming(wire.bulks_in, || bincode::deserialize::<T>(bytes))
        .map_err(|e| format!("a {} that does not decode: {e}", std::any::type_name::<T>()))
}

/// [`decode`], boxed as the engine carries tokens.
pub(crate) fn decode_boxed<T: Token>(wire: WireToken) -> Result<Box<dyn std::any::Any + Send>, String> {
    decode::<T>(wire).map(|t| Box::new(t) as Box<dyn std::any::Any + Send>)
}

fn read_vec(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut v = vec![0u8; n];
    r.read_exact(&mut v).map_err(truncated)?;
    Ok(v)
}

fn read_array<const N: usize>(r: &mut impl Read) -> std::io::Result<[u8; N]> {
    let mut a = [0u8; N];
    r.read_exact(&mut a).map_err(truncated)?;
    Ok(a)
}

fn bad(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("malformed message: {what}"))
}

fn truncated(e: std::io::Error) -> std::io::Error {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => bad("truncated".into()),
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bulk;

    #[test]
    fn a_token_with_bulks_round_trips_and_a_truncated_one_is_an_error() {
        let value = (7u32, Bulk::from(vec![1.5f64; 5000]));
        let wire = crate::wire::encode::<(u32, Bulk<f64>)>(Box::new(value.clone()));
        let mut buf = Vec::new();
        write(&mut buf, &Msg::Request { id: 3 }, Some(wire)).unwrap();
        assert!(buf.len() > 40_000 && buf.len() < 40_100, "bulk bytes written once: {}", buf.len());
        let (msg, token) = read(&mut buf.as_slice(), None).unwrap().unwrap();
        assert_eq!(msg, Msg::Request { id: 3 });
        let back: (u32, Bulk<f64>) = decode(token.unwrap()).unwrap();
        assert_eq!(back, value);
        // Every cut is an error, not a panic; a cut before anything is a closed connection.
        assert!(read(&mut &buf[..0], None).unwrap().is_none());
        for cut in [1, 3, 5, 20, 100, buf.len() - 1] {
            let e = read(&mut &buf[..cut], None).unwrap_err();
            assert!(e.to_string().contains("malformed message"), "cut {cut}: {e}");
        }
    }

    #[test]
    fn lent_bulks_are_copied_from_the_lender_and_a_bad_address_is_a_malformed_message() {
        type T = (u32, Bulk<f64>, Bulk<u8>);
        let value: T = (7, Bulk::from(vec![1.5f64; 5000]), Bulk::from(vec![9u8; 2000]));
        let (mut out, kept) = Outgoing::lending(4, crate::wire::encode::<T>(Box::new(value.clone())), 10_000);
        let kept = kept.expect("the 40 000-byte bulk is lent");
        let addr = kept.bulks_out.iter().find(|b| b.len == 40_000).unwrap().ptr as u64;
        let mut buf = Vec::new();
        out.write_all(&mut buf).unwrap();
        assert!(buf.len() > 2000 && buf.len() < 2100, "the head and the small bulk only: {}", buf.len());
        let me = Lender::try_probe(&probe()).expect("a process may read its own memory");
        let (msg, token) = read(&mut buf.as_slice(), Some(&me)).unwrap().unwrap();
        assert_eq!(msg, Msg::Lent { id: 4 });
        assert_eq!(decode::<T>(token.unwrap()).unwrap(), value);
        // Where no lending was agreed, and at an address that is not mapped: malformed.
        let e = read(&mut buf.as_slice(), None).unwrap_err();
        assert!(e.to_string().contains("malformed message: a lent bulk where none was agreed"), "{e}");
        let at = buf.windows(8).position(|w| w == addr.to_le_bytes()).unwrap();
        buf[at..at + 8].copy_from_slice(&8u64.to_le_bytes());
        let e = read(&mut buf.as_slice(), Some(&me)).unwrap_err();
        assert!(e.to_string().contains("malformed message: a lent bulk of 40000 bytes that cannot be read"), "{e}");
        // A reply without a bulk that large is an ordinary one.
        let small: T = (1, Bulk::from(vec![2.5f64; 100]), Bulk::from(vec![]));
        let (_, none) = Outgoing::lending(5, crate::wire::encode::<T>(Box::new(small)), 10_000);
        assert!(none.is_none());
        // A probe another process's value does not match (a wrong pid or address) is refused.
        assert!(Lender::try_probe(&Probe { value: probe().value ^ 1, ..probe() }).is_none());
        assert!(Lender::try_probe(&Probe { pid: u32::MAX, ..probe() }).is_none());
    }

    /// Takes at most 7 bytes of the first buffer per write, as a socket that is nearly full.
    struct Trickle(Vec<u8>);

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_message_written_in_many_parts_is_the_same_message() {
        let value = (9u32, Bulk::from(vec![2.5f32; 300]), Bulk::from(Vec::<u8>::new()), Bulk::from(vec![7u16; 3]));
        let encode = || crate::wire::encode::<(u32, Bulk<f32>, Bulk<u8>, Bulk<u16>)>(Box::new(value.clone()));
        let mut whole = Vec::new();
        write(&mut whole, &Msg::Reply { id: 5 }, Some(encode())).unwrap();
        let mut out = Outgoing::new(&Msg::Reply { id: 5 }, Some(encode()));
        let mut parts = Trickle(Vec::new());
        let mut writes = 0;
        while !out.is_done() {
            let n = parts.write_vectored(&out.unsent()).unwrap();
            out.advance(n);
            writes += 1;
        }
        assert!(writes > 100, "{writes}");
        assert!(parts.0 == whole);
        let (_, token) = read(&mut whole.as_slice(), None).unwrap().unwrap();
        assert_eq!(decode::<(u32, Bulk<f32>, Bulk<u8>, Bulk<u16>)>(token.unwrap()).unwrap(), value);
    }

    #[test]
    fn garbage_and_huge_lengths_are_refused_before_allocating() {
        for junk in [&b"\xff\xff\xff\xff"[..], b"\x02\x00\x00\x00\xff\xff\x00", b"GET / HTTP/1.1\r\n\r\n"] {
            assert!(read(&mut &junk[..], None).is_err(), "{junk:?}");
        }
        let mut huge = Vec::new();
        write(&mut huge, &Msg::Reply { id: 1 }, None).unwrap();
        huge.pop();
        huge.push(1);
        huge.extend_from_slice(&0u32.to_le_bytes());
        huge.extend_from_slice(&1u16.to_le_bytes());
        huge.push(8);
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(read(&mut huge.as_slice(), None).unwrap_err().to_string().contains("bulks of more than"));
        let wrong = decode::<String>(WireToken {
            bytes: vec![9; 3],
            bulks_out: vec![],
            bulks_in: vec![],
            lends: false,
            keep: None,
        });
        assert!(wrong.is_err());
    }
}
