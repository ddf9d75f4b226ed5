//! Tokens: the data objects that flow through a graph, and `Bulk`, their byte-copy payload.
//!
//! Any owned `Serialize + DeserializeOwned + Send + 'static` type is a token. Tokens handed to
//! a thread on the same rank are moved, never encoded. Tokens that cross ranks are encoded
//! with bincode, except the `Bulk` vectors inside them: those travel as raw bytes in MPI
//! messages of their own, sent straight from the vector's memory and received straight into a
//! freshly allocated vector, so a large numeric payload is never encoded element by element.

use serde::de::{DeserializeOwned, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use std::ops::{Deref, DerefMut};

use crate::bulk_vec::{self, BulkElem};
use crate::pool;

/// A value that can flow through a DPS graph.
///
/// Implemented for every owned serde type; there is nothing to implement by hand.
///
/// ```
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct CharToken { chr: char, pos: usize }
/// fn is_token<T: dps::Token>() {}
/// is_token::<CharToken>();
/// ```
pub trait Token: Serialize + DeserializeOwned + Send + 'static {}
impl<T: Serialize + DeserializeOwned + Send + 'static> Token for T {}

/// A vector of plain numbers that crosses ranks as raw bytes (one memory copy by MPI, no
/// encoding). Use it for matrix blocks, image tiles and any other large numeric payload.
/// Large bulks are recycled when dropped (see [`Bulk::recycled`]), so a stream of large
/// tokens does not pay for fresh pages on every token.
///
/// It dereferences to `Vec<T>`:
///
/// ```
/// use dps::Bulk;
/// let mut block: Bulk<f64> = vec![0.0; 4].into();
/// block[1] = 2.5;
/// assert_eq!(block.iter().sum::<f64>(), 2.5);
/// let v: Vec<f64> = block.into_inner();
/// assert_eq!(v.len(), 4);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bulk<T: BulkElem>(pub Vec<T>);

impl<T: BulkElem> Bulk<T> {
    /// Unwraps the vector.
    pub fn into_inner(mut self) -> Vec<T> {
        self.take_vec()
    }

    fn take_vec(&mut self) -> Vec<T> {
        std::mem::take(&mut self.0)
    }

    /// A bulk of `len` elements whose values are unspecified: a recycled buffer of the same
    /// type and length if one is free (old contents, but always initialised memory), else
    /// zeroes. Use it for buffers that are about to be overwritten.
    ///
    /// ```
    /// let b = dps::Bulk::<f64>::recycled(1 << 16);
    /// assert_eq!(b.len(), 1 << 16);
    /// ```
    pub fn recycled(len: usize) -> Bulk<T> {
        let bytes = len * std::mem::size_of::<T>();
        match pool::take(T::KIND, len, bytes).and_then(T::from_any) {
            Some(v) => Bulk(v),
            None => Bulk(vec![T::zeroed(); len]),
        }
    }
}

impl<T: BulkElem> Drop for Bulk<T> {
    fn drop(&mut self) {
        if self.0.capacity() * std::mem::size_of::<T>() >= pool::MIN_BYTES {
            pool::put(T::into_any_vec(self.take_vec()));
        }
    }
}

impl<T: BulkElem> From<Vec<T>> for Bulk<T> {
    fn from(v: Vec<T>) -> Self {
        Bulk(v)
    }
}

impl<T: BulkElem> Deref for Bulk<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T: BulkElem> DerefMut for Bulk<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

/// Bulks smaller than this travel inside the token's encoding: a message of their own would
/// cost more than copying them.
const INLINE_BYTES: usize = 4096;
/// The index that marks an inline bulk.
const INLINE: u32 = u32::MAX;

/// The marker of a lent node-shared bulk ([`Shared`](crate::Shared)).
pub(crate) const LENT: u32 = u32::MAX - 1;

impl<T: BulkElem> Serialize for Bulk<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_elems(&self.0, s)
    }
}

/// Encodes elements as a bulk: inside the transport a large bulk goes out of band and only
/// its index is encoded; anywhere else (JSON, a file) the elements are encoded normally.
pub(crate) fn serialize_elems<T: BulkElem, S: Serializer>(elems: &[T], s: S) -> Result<S::Ok, S::Error> {
    if !bulk_vec::encoding_with_bulks() {
        return elems.serialize(s);
    }
    let bytes: &[u8] = bytemuck::cast_slice(elems);
    if bytes.len() < INLINE_BYTES {
        return (INLINE, RawBytes(bytes)).serialize(s);
    }
    let index = bulk_vec::register_outgoing(bytes, T::KIND, elems.len()).expect("encoding with bulks");
    (index, RawBytes(&[])).serialize(s)
}

impl<'de, T: BulkElem> Deserialize<'de> for Bulk<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !bulk_vec::decoding_with_bulks() {
            return Vec::<T>::deserialize(d).map(Bulk);
        }
        let (index, inline) = <(u32, ByteBuf)>::deserialize(d)?;
        received_elems(index, inline.0).map(Bulk).map_err(serde::de::Error::custom)
    }
}

/// The elements of a bulk decoded inside the transport as `(index, inline bytes)`.
pub(crate) fn received_elems<T: BulkElem>(index: u32, inline: Vec<u8>) -> Result<Vec<T>, String> {
    if index == INLINE {
        let size = std::mem::size_of::<T>();
        if !inline.len().is_multiple_of(size) {
            return Err("inline bulk length is not a multiple of its element size".into());
        }
        let mut v = vec![T::zeroed(); inline.len() / size];
        bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&inline);
        return Ok(v);
    }
    let any = bulk_vec::take_incoming(index).ok_or_else(|| format!("bulk payload #{index} missing from message"))?;
    T::from_any(any).ok_or_else(|| "bulk payload has another element type".into())
}

/// A [`Bulk`], or in a NOALLOC simulation only its length (the simulator paper's NOALLOC: when only
/// the sizes of the tokens matter, the data is not allocated at all, so a simulation's
/// memory does not grow with the problem). A present one crosses ranks exactly as a `Bulk`
/// does (same encoding); an absent one is counted at its full size by the encoder, so the
/// simulator charges the same wire time, and is never allocated nor sent. Absent bulks exist
/// only under `--sim-mode noalloc`: encoding one anywhere else is an error.
///
/// It dereferences to the elements; reading those of an absent bulk panics (a program in
/// NOALLOC must skip every computation on it, see [`skip_kernel`](crate::skip_kernel)).
///
/// ```
/// use dps::MaybeBulk;
/// let b = MaybeBulk::<f64>::recycled(8); // absent only in a NOALLOC simulation
/// assert_eq!((b.len(), b.is_absent(), b.iter().count()), (8, false, 8));
/// assert_eq!(MaybeBulk::<f64>::Absent(1 << 40).len(), 1 << 40);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum MaybeBulk<T: BulkElem> {
    /// The data.
    Data(Bulk<T>),
    /// Only the number of elements.
    Absent(usize),
}

/// Whether this thread runs a NOALLOC simulation.
pub(crate) fn noalloc() -> bool {
    crate::simclock::simulated() == Some(crate::simclock::SimMode::Noalloc)
}

impl<T: BulkElem> MaybeBulk<T> {
    /// A buffer of `len` elements to be overwritten: absent in a NOALLOC simulation, else
    /// [`Bulk::recycled`].
    pub fn recycled(len: usize) -> Self {
        if noalloc() {
            MaybeBulk::Absent(len)
        } else {
            MaybeBulk::Data(Bulk::recycled(len))
        }
    }

    /// `len` elements made by `make` (which must return that many), or absent without
    /// calling it in a NOALLOC simulation.
    ///
    /// # Panics
    /// If `make` returns another number of elements.
    pub fn from_fn(len: usize, make: impl FnOnce() -> Vec<T>) -> Self {
        if noalloc() {
            return MaybeBulk::Absent(len);
        }
        let v = make();
        assert_eq!(v.len(), len, "dps: MaybeBulk::from_fn made {} elements, not {len}", v.len());
        MaybeBulk::Data(Bulk(v))
    }

    /// The number of elements, present or not.
    pub fn len(&self) -> usize {
        match self {
            MaybeBulk::Data(b) => b.len(),
            MaybeBulk::Absent(len) => *len,
        }
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Only the length is here.
    pub fn is_absent(&self) -> bool {
        matches!(self, MaybeBulk::Absent(_))
    }

    /// The data, if present.
    pub fn data(&self) -> Option<&Bulk<T>> {
        match self {
            MaybeBulk::Data(b) => Some(b),
            MaybeBulk::Absent(_) => None,
        }
    }

    /// The data, if present, to modify.
    pub fn data_mut(&mut self) -> Option<&mut Bulk<T>> {
        match self {
            MaybeBulk::Data(b) => Some(b),
            MaybeBulk::Absent(_) => None,
        }
    }

    /// The data, if present.
    pub fn into_data(self) -> Option<Bulk<T>> {
        match self {
            MaybeBulk::Data(b) => Some(b),
            MaybeBulk::Absent(_) => None,
        }
    }
}

/// No elements, present.
impl<T: BulkElem> Default for MaybeBulk<T> {
    fn default() -> Self {
        MaybeBulk::Data(Bulk(Vec::new()))
    }
}

impl<T: BulkElem> From<Bulk<T>> for MaybeBulk<T> {
    fn from(b: Bulk<T>) -> Self {
        MaybeBulk::Data(b)
    }
}

impl<T: BulkElem> From<Vec<T>> for MaybeBulk<T> {
    fn from(v: Vec<T>) -> Self {
        MaybeBulk::Data(Bulk(v))
    }
}

impl<T: BulkElem> Deref for MaybeBulk<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            MaybeBulk::Data(b) => b,
            MaybeBulk::Absent(len) => panic!("dps: the {len} elements of an absent bulk (NOALLOC) were read"),
        }
    }
}

impl<T: BulkElem> DerefMut for MaybeBulk<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            MaybeBulk::Data(b) => b,
            MaybeBulk::Absent(len) => panic!("dps: the {len} elements of an absent bulk (NOALLOC) were written"),
        }
    }
}

impl<T: BulkElem> Serialize for MaybeBulk<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = match self {
            MaybeBulk::Data(b) => return b.serialize(s),
            MaybeBulk::Absent(len) => *len,
        };
        serialize_absent::<T, S>(len, s)
    }
}

/// Encodes an absent bulk of `len` elements, counted as an out-of-band bulk of its full size:
/// only the simulator's encoder (which measures tokens and never sends them) may see one.
pub(crate) fn serialize_absent<T: BulkElem, S: Serializer>(len: usize, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::Error;
    let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| S::Error::custom("bulk too large"))?;
    let index = noalloc().then(|| bulk_vec::register_absent(bytes, T::KIND, len)).flatten();
    match index {
        Some(index) => (index, RawBytes(&[])).serialize(s),
        None => Err(S::Error::custom("an absent bulk (NOALLOC) has no data to encode outside a NOALLOC simulation")),
    }
}

impl<'de, T: BulkElem> Deserialize<'de> for MaybeBulk<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Bulk::deserialize(d).map(MaybeBulk::Data)
    }
}

/// Bytes encoded as one block (`serialize_bytes`), not element by element.
pub(crate) struct RawBytes<'a>(pub(crate) &'a [u8]);

impl Serialize for RawBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// The decoding side of [`RawBytes`].
pub(crate) struct ByteBuf(pub(crate) Vec<u8>);

impl<'de> Deserialize<'de> for ByteBuf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = ByteBuf;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<ByteBuf, E> {
                Ok(ByteBuf(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<ByteBuf, E> {
                Ok(ByteBuf(v))
            }
        }
        d.deserialize_bytes(Visit)
    }
}
