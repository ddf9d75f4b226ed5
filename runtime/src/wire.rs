//! Wire form of tokens and of the packets the transport exchanges.
//!
//! A token is encoded with bincode; each [`Bulk`](crate::Bulk) inside it is recorded as a
//! pointer into the token's own memory and sent as a separate MPI message, so the token is
//! kept alive until those sends complete. A packet carries one or more frames for the same
//! destination (small messages are coalesced); the bulk messages of its frames follow it, in
//! order, from the same source.
//!
//! Frame layout: `u32 header_len, header, u8 has_payload, [u32 len, payload, u16 nbulk,
//! nbulk x (u8 kind, u64 count)]`.

use std::any::Any;

use crate::bulk_vec::{self, BulkRef, BulkVec};
use crate::pool;
use crate::token::Token;

/// An encoded token. Outgoing: `keep` owns the memory `bulks_out` points into.
/// Incoming: `bulks_in` holds the received vectors.
pub(crate) struct WireToken {
    pub(crate) bytes: Vec<u8>,
    pub(crate) bulks_out: Vec<BulkRef>,
    pub(crate) bulks_in: Vec<BulkVec>,
    /// It lends node memory (`dps::Shared`): its receiver's work waits on it as on bulk
    /// data, so it leaves as soon as bulk data does.
    pub(crate) lends: bool,
    #[allow(dead_code)] // held only to keep the bulk memory alive
    pub(crate) keep: Option<Box<dyn Any + Send>>,
}

// SAFETY: the raw pointers in `bulks_out` are the only fields that are not `Send`. They point
// into the heap buffers of `keep` (which is `Send`), move with it to the one thread that reads
// them (the progress thread), and are only read while `keep` is alive: it is dropped after the
// sends reading them have completed (see `transport::mpi::as_static`).
unsafe impl Send for WireToken {}

impl std::fmt::Debug for WireToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WireToken({} bytes, {} bulks)", self.bytes.len(), self.bulks_out.len() + self.bulks_in.len())
    }
}

/// Encodes a token of type `T` (boxed as `Any`) for another rank.
pub(crate) fn encode<T: Token>(token: Box<dyn Any + Send>) -> WireToken {
    let token = token.downcast::<T>().expect("dps: token type does not match the node's input type");
    // One pass (`serialize_into`): `bincode::serialize` would visit the token twice.
    let mut bytes = Vec::new();
    let (result, bulks_out, lends) = bulk_vec::stage_outgoing(|| bincode::serialize_into(&mut bytes, &*token));
    result.unwrap_or_else(|e| panic!("dps: cannot encode token {}: {e}", std::any::type_name::<T>()));
    WireToken { bytes, bulks_out, bulks_in: Vec::new(), lends, keep: Some(token) }
}

/// Decodes a received token as type `T`.
pub(crate) fn decode<T: Token>(wire: WireToken) -> Box<dyn Any + Send> {
    let bytes = &wire.bytes;
    let value = bulk_vec::stage_incoming(wire.bulks_in, || bincode::deserialize::<T>(bytes));
    match value {
        Ok(v) => Box::new(v),
        Err(e) => panic!("dps: cannot decode token {}: {e}", std::any::type_name::<T>()),
    }
}

/// Appends one frame (header plus optional token) to a packet; returns the bulks to send after it.
pub(crate) fn push_frame(packet: &mut Vec<u8>, header: &[u8], token: Option<&WireToken>) {
    packet.extend_from_slice(&(header.len() as u32).to_le_bytes());
    packet.extend_from_slice(header);
    match token {
        None => packet.push(0),
        Some(t) => {
            packet.push(1);
            packet.extend_from_slice(&(t.bytes.len() as u32).to_le_bytes());
            packet.extend_from_slice(&t.bytes);
            packet.extend_from_slice(&(t.bulks_out.len() as u16).to_le_bytes());
            for b in &t.bulks_out {
                packet.push(b.kind);
                packet.extend_from_slice(&(b.count as u64).to_le_bytes());
            }
        }
    }
}

/// A frame read back from a packet: header bytes, and the token with its bulk vectors
/// allocated (to be filled by the bulk messages that follow).
#[derive(Debug)]
pub(crate) struct InFrame {
    pub(crate) header: Vec<u8>,
    pub(crate) token: Option<WireToken>,
}

/// Splits a received packet into frames.
pub(crate) fn parse_packet(packet: &[u8]) -> Result<Vec<InFrame>, String> {
    let mut r = Reader { buf: packet, pos: 0 };
    let mut frames = Vec::new();
    while r.pos < packet.len() {
        let hlen = r.u32()? as usize;
        let header = r.bytes(hlen)?.to_vec();
        let token = if r.u8()? == 1 {
            let plen = r.u32()? as usize;
            let bytes = r.bytes(plen)?.to_vec();
            let nbulk = u16::from_le_bytes(r.bytes(2)?.try_into().unwrap());
            let mut bulks_in = Vec::with_capacity(nbulk as usize);
            for _ in 0..nbulk {
                let kind = r.u8()?;
                let count = u64::from_le_bytes(r.bytes(8)?.try_into().unwrap()) as usize;
                bulks_in.push(pool::alloc(kind, count).ok_or(format!("unknown bulk kind {kind}"))?);
            }
            Some(WireToken { bytes, bulks_out: Vec::new(), bulks_in, lends: false, keep: None })
        } else {
            None
        };
        frames.push(InFrame { header, token });
    }
    Ok(frames)
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or("truncated packet")?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bulk;

    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Tile {
        id: u32,
        data: Bulk<f64>,
        mask: Bulk<u8>,
    }

    #[test]
    fn bulk_travels_out_of_band_and_round_trips() {
        let tile = Tile { id: 7, data: vec![1.5; 1000].into(), mask: vec![1, 2, 3].into() };
        let wire = encode::<Tile>(Box::new(Tile { id: 7, data: tile.data.clone(), mask: tile.mask.clone() }));
        assert!(wire.bytes.len() < 64, "large bulk data must not be in the encoded bytes");
        assert_eq!(wire.bulks_out.len(), 1, "the small mask travels inline, the data out of band");
        let mut packet = Vec::new();
        push_frame(&mut packet, b"hdr", Some(&wire));
        let mut frames = parse_packet(&packet).unwrap();
        assert_eq!(frames.len(), 1);
        let mut tok = frames.remove(0).token.unwrap();
        for (dst, src) in tok.bulks_in.iter_mut().zip(&wire.bulks_out) {
            // SAFETY: `wire.keep` owns the memory and is alive here.
            dst.as_bytes_mut().copy_from_slice(unsafe { std::slice::from_raw_parts(src.ptr, src.len) });
        }
        let back = decode::<Tile>(tok).downcast::<Tile>().unwrap();
        assert_eq!(*back, tile);
    }

    #[derive(serde::Serialize, serde::Deserialize, Debug)]
    struct Lean {
        id: u32,
        data: crate::MaybeBulk<f64>,
    }

    #[test]
    fn an_absent_bulk_counts_its_full_size_only_under_noalloc() {
        let size = |wire: &WireToken| wire.bytes.len() + wire.bulks_out.iter().map(|b| b.len).sum::<usize>();
        let present = encode::<Lean>(Box::new(Lean { id: 1, data: vec![0.5; 1000].into() }));
        crate::simclock::install(crate::SimMode::Noalloc, std::sync::Arc::new(|_, _, _| None));
        let absent = crate::MaybeBulk::<f64>::recycled(1000);
        assert!(absent.is_absent(), "NOALLOC allocates nothing");
        let wire = encode::<Lean>(Box::new(Lean { id: 1, data: absent }));
        crate::simclock::uninstall();
        assert_eq!(size(&wire), size(&present), "absent and present bulks weigh the same on the wire");
        assert!(wire.bulks_out[0].ptr.is_null() && wire.bulks_out[0].len == 8000);
        let real =
            std::panic::catch_unwind(|| encode::<Lean>(Box::new(Lean { id: 1, data: crate::MaybeBulk::Absent(9) })));
        assert!(real.is_err(), "an absent bulk must never be encoded for a real transport");
        assert!(!bulk_vec::encoding_with_bulks());
    }

    #[test]
    fn truncated_packet_is_an_error() {
        let mut packet = Vec::new();
        push_frame(&mut packet, b"header", None);
        assert!(parse_packet(&packet[..packet.len() - 2]).is_err());
    }
}
