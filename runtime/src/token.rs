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
        let bytes = self.0.len() * std::mem::size_of::<T>();
        if bytes >= pool::MIN_BYTES {
            let len = self.0.len();
            pool::put(T::KIND, len, bytes, T::into_any_vec(self.take_vec()));
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

impl<T: BulkElem> Serialize for Bulk<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Inside the transport a large bulk goes out of band and only its index is encoded;
        // anywhere else (JSON, a file) the vector is encoded normally.
        if !bulk_vec::encoding_with_bulks() {
            return self.0.serialize(s);
        }
        let bytes: &[u8] = bytemuck::cast_slice(&self.0);
        if bytes.len() < INLINE_BYTES {
            return (INLINE, RawBytes(bytes)).serialize(s);
        }
        let index = bulk_vec::register_outgoing(bytes, T::KIND, self.0.len()).expect("encoding with bulks");
        (index, RawBytes(&[])).serialize(s)
    }
}

impl<'de, T: BulkElem> Deserialize<'de> for Bulk<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if !bulk_vec::decoding_with_bulks() {
            return Vec::<T>::deserialize(d).map(Bulk);
        }
        let (index, inline) = <(u32, ByteBuf)>::deserialize(d)?;
        if index == INLINE {
            let size = std::mem::size_of::<T>();
            if inline.0.len() % size != 0 {
                return Err(serde::de::Error::custom("inline bulk length is not a multiple of its element size"));
            }
            let mut v = vec![T::zeroed(); inline.0.len() / size];
            bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&inline.0);
            return Ok(Bulk(v));
        }
        let any = bulk_vec::take_incoming(index)
            .ok_or_else(|| serde::de::Error::custom(format!("bulk payload #{index} missing from message")))?;
        T::from_any(any).map(Bulk).ok_or_else(|| serde::de::Error::custom("bulk payload has another element type"))
    }
}

/// Bytes encoded as one block (`serialize_bytes`), not element by element.
struct RawBytes<'a>(&'a [u8]);

impl Serialize for RawBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// The decoding side of [`RawBytes`].
struct ByteBuf(Vec<u8>);

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
