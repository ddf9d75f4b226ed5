//! [`Shared`]: a read-only bulk that the ranks of one node map instead of copying.

use std::ops::Deref;
use std::sync::Arc;

use serde::de::{DeserializeOwned, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use crate::bulk_vec::{self, BulkElem, Route};
use crate::shm::Segment;
use crate::token::{self, Bulk, ByteBuf, MaybeBulk, RawBytes, LENT};

/// Smaller vectors stay on the heap and travel as bytes: copying them costs less than
/// lending a segment (a few system calls on each side).
const MIN_SEGMENT_BYTES: usize = 256 * 1024;

/// How node-shared memory is paged on this node: the `huge=` mode of the tmpfs at `/dev/shm`
/// (`never`, as Debian mounts it: 4 KiB pages; `advise`, `within_size` or `always`: huge
/// pages for [`Shared`] vectors), or `deny` / `force` where the kernel overrides every mount.
pub fn shared_memory_huge_pages() -> String {
    crate::shm::huge_pages()
}

/// A read-only vector of plain numbers that ranks on one node share rather than copy.
///
/// It is built once, in node-shared memory (a file in `/dev/shm`). Sent to a rank on the same
/// node, it crosses as a name: the receiver maps the same pages, and neither core copies a
/// byte. Sent to a rank on another node it travels as bytes, like a [`Bulk`]. Clones are
/// cheap (the memory is shared). Vectors under 256 KiB, and every vector where the node has
/// no usable `/dev/shm` or `DPS_SHARED_MEMORY=off`, live on the heap and travel as bytes. In
/// a NOALLOC simulation only the length exists (as for [`MaybeBulk`](crate::MaybeBulk)).
///
/// Use it for large operands that other ranks only read: a matrix's strips sent to workers.
/// The trade-off: shared memory is on 4 KiB pages unless the tmpfs at `/dev/shm` is mounted
/// with huge pages ([`shared_memory_huge_pages`]; Debian's is not), which costs a kernel that
/// walks the data with large strides a few per cent; a copy costs more.
///
/// ```
/// let strip = dps::Shared::<f64>::from_fn(1 << 16, |x| x.fill(0.5));
/// assert_eq!((strip.len(), strip[7]), (1 << 16, 0.5));
/// let again = strip.clone(); // the same memory
/// assert_eq!(again.as_ptr(), strip.as_ptr());
/// ```
#[derive(Clone)]
pub struct Shared<T: BulkElem>(Store<T>);

#[derive(Clone)]
enum Store<T: BulkElem> {
    /// In node-shared memory: the segment and the number of elements.
    Segment(Arc<Segment>, usize),
    Heap(Arc<Bulk<T>>),
    /// NOALLOC: the number of elements only.
    Absent(usize),
}

impl<T: BulkElem> Shared<T> {
    /// `len` elements written by `fill` (into zeroes), or absent without calling it in a
    /// NOALLOC simulation.
    pub fn from_fn(len: usize, fill: impl FnOnce(&mut [T])) -> Self {
        if token::noalloc() {
            return Shared(Store::Absent(len));
        }
        let bytes = len.checked_mul(std::mem::size_of::<T>()).expect("dps: Shared too large");
        if let Some(mut segment) = (bytes >= MIN_SEGMENT_BYTES && enabled()).then(|| Segment::create(bytes)).flatten() {
            fill(bytemuck::cast_slice_mut(segment.bytes_mut().expect("a new segment is writable")));
            return Shared(Store::Segment(Arc::new(segment), len));
        }
        let mut v = vec![T::zeroed(); len];
        fill(&mut v);
        Shared::from(v)
    }

    /// Whether `len` elements fit in node-shared memory here (a usable `/dev/shm` at least
    /// that large, and `DPS_SHARED_MEMORY` not `off`): ranks of this node would then map
    /// them, not copy them. A container's `/dev/shm` is often 64 MB. Its size, not its free
    /// space (which changes), so that the ranks of a node agree; a vector that finds no
    /// room when it is made goes to the heap.
    pub fn room_for(len: usize) -> bool {
        let bytes = len.saturating_mul(std::mem::size_of::<T>()) as u64;
        enabled() && crate::shm::usable() && crate::shm::size() >= bytes
    }

    /// The elements of `v` (copied into node-shared memory where it is used).
    pub fn from_slice(v: &[T]) -> Self {
        Shared::from_fn(v.len(), |dst| dst.copy_from_slice(v))
    }

    /// The number of elements, present or not.
    pub fn len(&self) -> usize {
        match &self.0 {
            Store::Segment(_, len) | Store::Absent(len) => *len,
            Store::Heap(v) => v.len(),
        }
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Only the length is here (NOALLOC).
    pub fn is_absent(&self) -> bool {
        matches!(self.0, Store::Absent(_))
    }

    /// In node-shared memory (else on the heap, or absent).
    pub fn in_node_memory(&self) -> bool {
        matches!(self.0, Store::Segment(..))
    }
}

/// On the heap, without a copy: it travels as bytes (use [`Shared::from_fn`] for node memory).
impl<T: BulkElem> From<Vec<T>> for Shared<T> {
    fn from(v: Vec<T>) -> Self {
        Shared(Store::Heap(Arc::new(Bulk(v))))
    }
}

/// On the heap (or absent), without a copy: it travels as bytes.
impl<T: BulkElem> From<MaybeBulk<T>> for Shared<T> {
    fn from(b: MaybeBulk<T>) -> Self {
        match b {
            MaybeBulk::Data(b) => Shared(Store::Heap(Arc::new(b))),
            MaybeBulk::Absent(len) => Shared(Store::Absent(len)),
        }
    }
}

/// Whether segments may be used: `DPS_SHARED_MEMORY` unset, `on` or `1` (the default), not
/// `off` or `0`. Any other value is refused by `Runtime::init` (and is `on` until then).
pub(crate) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| setting().unwrap_or(true))
}

/// `DPS_SHARED_MEMORY`, checked.
pub(crate) fn setting() -> Result<bool, crate::Error> {
    match std::env::var("DPS_SHARED_MEMORY").as_deref() {
        Err(_) | Ok("on" | "1") => Ok(true),
        Ok("off" | "0") => Ok(false),
        Ok(other) => Err(crate::Error::new(
            crate::ErrorKind::Usage,
            format!("DPS_SHARED_MEMORY=\"{other}\": lending node-shared memory must be on or off"),
        )),
    }
}

impl<T: BulkElem> Deref for Shared<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.0 {
            Store::Segment(segment, _) => bytemuck::cast_slice(segment.bytes()),
            Store::Heap(v) => v,
            Store::Absent(len) => panic!("dps: the {len} elements of an absent bulk (NOALLOC) were read"),
        }
    }
}

impl<T: BulkElem> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match self.0 {
            Store::Segment(..) => "node memory",
            Store::Heap(_) => "heap",
            Store::Absent(_) => "absent",
        };
        write!(f, "Shared({} elements, {place})", self.len())
    }
}

/// Equal lengths and bitwise equal elements.
impl<T: BulkElem> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Store::Absent(a), Store::Absent(b)) => a == b,
            (Store::Absent(_), _) | (_, Store::Absent(_)) => false,
            _ => bytemuck::cast_slice::<T, u8>(self) == bytemuck::cast_slice::<T, u8>(other),
        }
    }
}

impl<T: BulkElem> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Store::Absent(len) = self.0 {
            return token::serialize_absent::<T, S>(len, s);
        }
        if let (Store::Segment(segment, _), true) = (&self.0, bulk_vec::encoding_with_bulks()) {
            let bytes = segment.bytes().len();
            if let Some(name) = (bulk_vec::route() == Route::Lend).then(|| segment.lend()).flatten() {
                bulk_vec::note_lent();
                return (LENT, RawBytes(format!("{name} {bytes}").as_bytes())).serialize(s);
            }
        }
        token::serialize_elems(self, s)
    }
}

impl<'de, T: BulkElem + DeserializeOwned> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        if !bulk_vec::decoding_with_bulks() {
            return Vec::<T>::deserialize(d).map(Shared::from);
        }
        let (index, buf) = <(u32, ByteBuf)>::deserialize(d)?;
        if index != LENT {
            let v = token::received_elems(index, buf.0).map_err(D::Error::custom)?;
            return Ok(Shared::from(v));
        }
        let text = String::from_utf8(buf.0).map_err(D::Error::custom)?;
        let (name, bytes) = text
            .split_once(' ')
            .and_then(|(name, bytes)| Some((name, bytes.parse::<usize>().ok()?)))
            .ok_or_else(|| D::Error::custom(format!("bad lent segment {text:?}")))?;
        let size = std::mem::size_of::<T>();
        if !bytes.is_multiple_of(size) {
            return Err(D::Error::custom("lent segment length is not a multiple of its element size"));
        }
        let segment = Segment::open_lent(name, bytes)
            .map_err(|e| D::Error::custom(format!("cannot map segment {name} lent by a rank of this node: {e}")))?;
        Ok(Shared(Store::Segment(Arc::new(segment), bytes / size)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Job {
        id: u32,
        a: Shared<f64>,
        small: Shared<u8>,
    }

    fn job() -> Job {
        Job {
            id: 3,
            a: Shared::from_fn(100_000, |x| x.iter_mut().enumerate().for_each(|(i, v)| *v = i as f64)),
            small: Shared::from_slice(&[1, 2]),
        }
    }

    /// Delivers an encoded token as the transport would (bulks copied into the receiver's).
    fn deliver(wire: wire::WireToken) -> Job {
        let mut packet = Vec::new();
        wire::push_frame(&mut packet, b"h", Some(&wire));
        let mut tok = wire::parse_packet(&packet).unwrap().remove(0).token.unwrap();
        for (dst, src) in tok.bulks_in.iter_mut().zip(&wire.bulks_out) {
            // SAFETY: `wire.keep` owns the memory and is alive here.
            dst.as_bytes_mut().copy_from_slice(unsafe { std::slice::from_raw_parts(src.ptr, src.len) });
        }
        *wire::decode::<Job>(tok).downcast::<Job>().unwrap()
    }

    #[test]
    fn lent_to_this_node_it_crosses_as_a_name_and_maps_the_same_pages() {
        let _lending = crate::shm::LENDING.lock().unwrap_or_else(|p| p.into_inner());
        let sent = job();
        if !sent.a.in_node_memory() {
            eprintln!("no usable /dev/shm here: only the bytes route is tested");
        }
        let wire = bulk_vec::routed(Route::Lend, || wire::encode::<Job>(Box::new(Job { id: 3, ..job() })));
        let lent = sent.a.in_node_memory();
        assert_eq!(wire.bulks_out.is_empty(), lent, "a lent bulk sends no bytes");
        assert_eq!(wire.lends, lent, "and the token says it lends, to leave at once");
        let got = deliver(wire);
        assert_eq!(got, sent);
        assert_eq!(got.a.in_node_memory(), lent);
    }

    #[test]
    fn room_is_the_size_of_dev_shm() {
        if Shared::<f64>::room_for(1) {
            assert!(!Shared::<u8>::room_for(usize::MAX), "no tmpfs holds 2^64 bytes");
        }
    }

    #[test]
    fn to_another_node_or_in_a_file_it_travels_as_bytes() {
        let sent = job();
        let wire = wire::encode::<Job>(Box::new(job()));
        assert_eq!(wire.bulks_out.len(), 1, "the large vector out of band, the small one inline");
        assert_eq!(wire.bulks_out[0].len, 800_000);
        assert!(!wire.lends);
        let got = deliver(wire);
        assert_eq!(got, sent);
        assert!(!got.a.in_node_memory());
        assert_eq!(bulk_vec::route(), Route::Bytes, "the route is reset after an encoding");
        let json = serde_json::to_string(&Job { id: 1, a: Shared::from_slice(&[0.5]), small: Shared::from_slice(&[]) })
            .unwrap();
        assert_eq!(json, r#"{"id":1,"a":[0.5],"small":[]}"#);
    }
}
