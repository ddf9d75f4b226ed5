//! Type-tagged bulk vectors, and the per-thread staging that carries them past serde.
//!
//! This is a leaf module: it imports nothing from the crate. [`Bulk`](crate::Bulk) (in
//! `token`), the buffer pool (`pool`) and the wire encoding (`wire`) all build on it, so that
//! imports only point down (see `runtime/README.md`).
//!
//! serde cannot hand a [`Bulk`](crate::Bulk) to the transport beside the encoded bytes, so the
//! transport's encoder *stages* them: while [`stage_outgoing`] runs an encoding, each large
//! bulk registers a raw view of its memory here and encodes only its index; while
//! [`stage_incoming`] runs a decoding, each bulk takes its received vector back by index.
//! Outside those calls nothing is staged and a bulk encodes as a plain vector (JSON, files).

use std::cell::RefCell;

/// Element types a [`Bulk`](crate::Bulk) vector may hold.
pub trait BulkElem: bytemuck::Pod + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static {
    /// Wraps a vector of this type into the type-tagged form the transport carries.
    #[doc(hidden)]
    fn into_any_vec(v: Vec<Self>) -> BulkVec;
    /// Takes the vector back out, or returns `None` if the tag is another type.
    #[doc(hidden)]
    fn from_any(v: BulkVec) -> Option<Vec<Self>>;
    /// The tag sent on the wire.
    #[doc(hidden)]
    const KIND: u8;
}

macro_rules! bulk_kinds {
    ($($variant:ident($t:ty) = $kind:expr),* $(,)?) => {
        /// A received bulk vector, tagged with its element type.
        #[doc(hidden)]
        #[derive(Debug)]
        pub enum BulkVec { $($variant(Vec<$t>)),* }

        impl BulkVec {
            /// A zeroed vector of `count` elements of the type tagged `kind`.
            pub(crate) fn zeroed(kind: u8, count: usize) -> Option<BulkVec> {
                match kind {
                    $($kind => Some(BulkVec::$variant(vec![<$t as bytemuck::Zeroable>::zeroed(); count])),)*
                    _ => None,
                }
            }
            /// The size in bytes of an element of the type tagged `kind`.
            pub(crate) fn elem_size(kind: u8) -> Option<usize> {
                match kind {
                    $($kind => Some(std::mem::size_of::<$t>()),)*
                    _ => None,
                }
            }
            /// The bytes of the vector's allocation (its capacity).
            pub(crate) fn capacity_bytes(&self) -> usize {
                match self { $(BulkVec::$variant(v) => v.capacity() * std::mem::size_of::<$t>()),* }
            }
            /// The number of elements the allocation holds.
            pub(crate) fn capacity(&self) -> usize {
                match self { $(BulkVec::$variant(v) => v.capacity()),* }
            }
            /// Sets the length to `count` (at most the capacity), for reuse: elements past the
            /// old length are zeroed, the others keep whatever they held.
            pub(crate) fn fit(&mut self, count: usize) {
                match self { $(BulkVec::$variant(v) => v.resize(count, <$t as bytemuck::Zeroable>::zeroed())),* }
            }
            /// The tag of the vector's element type.
            pub(crate) fn kind(&self) -> u8 {
                match self { $(BulkVec::$variant(_) => $kind),* }
            }
            /// The number of elements.
            pub(crate) fn count(&self) -> usize {
                match self { $(BulkVec::$variant(v) => v.len()),* }
            }
            /// The vector's memory as bytes, to send from.
            pub(crate) fn as_bytes(&self) -> &[u8] {
                match self { $(BulkVec::$variant(v) => bytemuck::cast_slice(v.as_slice())),* }
            }
            /// The vector's memory as bytes, to receive into.
            pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
                match self { $(BulkVec::$variant(v) => bytemuck::cast_slice_mut(v.as_mut_slice())),* }
            }
        }

        $(impl BulkElem for $t {
            fn into_any_vec(v: Vec<Self>) -> BulkVec { BulkVec::$variant(v) }
            fn from_any(v: BulkVec) -> Option<Vec<Self>> {
                match v { BulkVec::$variant(v) => Some(v), #[allow(unreachable_patterns)] _ => None }
            }
            const KIND: u8 = $kind;
        })*
    };
}

bulk_kinds! {
    U8(u8) = 1, U16(u16) = 2, U32(u32) = 3, U64(u64) = 4,
    I32(i32) = 5, I64(i64) = 6, F32(f32) = 7, F64(f64) = 8,
}

/// A bulk vector being sent: a raw view of memory owned by the token being encoded (the
/// owner keeps it alive and unmodified while the view is used: see `wire::WireToken`).
#[derive(Debug)]
pub(crate) struct BulkRef {
    pub(crate) ptr: *const u8,
    pub(crate) len: usize,
    pub(crate) kind: u8,
    pub(crate) count: usize,
}

/// How an encoding sends the node-shared bulks ([`Shared`](crate::Shared)) of its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// As bytes, like every bulk (the receiver is on another node, or not known).
    Bytes,
    /// Lent: the receiver maps the sender's segment (it is on the same node).
    Lend,
}

thread_local! {
    /// Whether the encoding running on this thread has lent a segment.
    static LENT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The route of the encoding running on this thread.
    static ROUTE: std::cell::Cell<Route> = const { std::cell::Cell::new(Route::Bytes) };
    /// `Some` while `stage_outgoing` runs: the bulks registered so far.
    static OUTGOING: RefCell<Option<Vec<BulkRef>>> = const { RefCell::new(None) };
    /// `Some` while `stage_incoming` runs: the received bulks not taken yet.
    static INCOMING: RefCell<Option<Vec<Option<BulkVec>>>> = const { RefCell::new(None) };
}

/// Runs `encode` with outgoing staging on; returns its result, the bulks it registered and
/// whether it lent node memory ([`note_lent`]).
pub(crate) fn stage_outgoing<R>(encode: impl FnOnce() -> R) -> (R, Vec<BulkRef>, bool) {
    /// Turns staging off even if `encode` panics (a user `Serialize` may), so that a later
    /// encoding on this thread (JSON, a file) is not taken for the transport's.
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            OUTGOING.with(|o| *o.borrow_mut() = None);
        }
    }
    OUTGOING.with(|o| *o.borrow_mut() = Some(Vec::new()));
    LENT.with(|l| l.set(false));
    let off = Off;
    let result = encode();
    let bulks = OUTGOING.with(|o| o.borrow_mut().take()).unwrap_or_default();
    drop(off);
    (result, bulks, LENT.with(|l| l.replace(false)))
}

/// Runs `encode` with node-shared bulks sent by `route` (else as bytes).
pub(crate) fn routed<R>(route: Route, encode: impl FnOnce() -> R) -> R {
    /// Restores the default even if `encode` panics.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            ROUTE.with(|r| r.set(Route::Bytes));
        }
    }
    ROUTE.with(|r| r.set(route));
    let _reset = Reset;
    encode()
}

/// Records that the encoding running on this thread lent node memory.
pub(crate) fn note_lent() {
    LENT.with(|l| l.set(true));
}

/// The route of the encoding running on this thread.
pub(crate) fn route() -> Route {
    ROUTE.with(|r| r.get())
}

/// Runs `decode` with `bulks` (a received token's vectors, in order) staged for it.
pub(crate) fn stage_incoming<R>(bulks: Vec<BulkVec>, decode: impl FnOnce() -> R) -> R {
    /// Turns staging off even if `decode` panics.
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            INCOMING.with(|i| *i.borrow_mut() = None);
        }
    }
    INCOMING.with(|i| *i.borrow_mut() = Some(bulks.into_iter().map(Some).collect()));
    let _off = Off;
    decode()
}

/// Registers `bytes` as the next outgoing bulk and returns its index; `None` when no
/// transport encoding is running on this thread.
pub(crate) fn register_outgoing(bytes: &[u8], kind: u8, count: usize) -> Option<u32> {
    OUTGOING.with(|o| {
        let mut o = o.borrow_mut();
        let list = o.as_mut()?;
        list.push(BulkRef { ptr: bytes.as_ptr(), len: bytes.len(), kind, count });
        Some((list.len() - 1) as u32)
    })
}

/// Registers a bulk that has no memory (a NOALLOC simulation's [`MaybeBulk`](crate::MaybeBulk)
/// of `count` elements, `len` bytes) and returns its index: the encoding counts its size,
/// and its null pointer is never read, because such a token is never sent (the simulator
/// moves tokens and only sums `len`). `None` when no transport encoding is running.
pub(crate) fn register_absent(len: usize, kind: u8, count: usize) -> Option<u32> {
    OUTGOING.with(|o| {
        let mut o = o.borrow_mut();
        let list = o.as_mut()?;
        list.push(BulkRef { ptr: std::ptr::null(), len, kind, count });
        Some((list.len() - 1) as u32)
    })
}

/// True while [`stage_outgoing`] runs on this thread.
pub(crate) fn encoding_with_bulks() -> bool {
    OUTGOING.with(|o| o.borrow().is_some())
}

/// True while [`stage_incoming`] runs on this thread.
pub(crate) fn decoding_with_bulks() -> bool {
    INCOMING.with(|i| i.borrow().is_some())
}

/// Takes staged incoming bulk number `index`; `None` if it does not exist or was taken.
pub(crate) fn take_incoming(index: u32) -> Option<BulkVec> {
    INCOMING.with(|i| i.borrow_mut().as_mut()?.get_mut(index as usize)?.take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_is_on_only_inside_the_call_and_off_after_a_panic() {
        assert!(!encoding_with_bulks());
        let (index, bulks, _) = stage_outgoing(|| {
            assert!(encoding_with_bulks());
            register_outgoing(&[1, 2, 3], u8::KIND, 3)
        });
        assert_eq!((index, bulks.len()), (Some(0), 1));
        assert!(!encoding_with_bulks() && register_outgoing(&[1], u8::KIND, 1).is_none());
        let panicked = std::panic::catch_unwind(|| stage_incoming(vec![BulkVec::U8(vec![7])], || panic!("decode")));
        assert!(panicked.is_err());
        assert!(!decoding_with_bulks(), "a panic in a decoding must not leave staging on");
    }

    #[test]
    fn incoming_bulks_are_taken_once_by_index() {
        let got = stage_incoming(vec![BulkVec::U8(vec![7]), BulkVec::F64(vec![1.5])], || {
            (take_incoming(1).map(|v| v.as_bytes().len()), take_incoming(1).is_none(), take_incoming(5).is_none())
        });
        assert_eq!(got, (Some(8), true, true));
    }
}
