//! The user-facing operation traits for merges and streams. Leaves and splits are plain
//! closures (see [`Node::leaf`](crate::Node::leaf) and [`Node::split`](crate::Node::split)).
//!
//! Every operation receives `&mut S`, the state of the thread it runs on. A thread runs one
//! operation at a time, so the state needs no lock.

use std::marker::PhantomData;

use crate::Token;

/// Collects the tokens of one split instance into one token.
///
/// The runtime counts the tokens the split produced; `finish` is called once all of them
/// were merged (immediately after `start` if the split produced none).
///
/// ```
/// use dps::Merge;
/// struct Sum;
/// impl Merge<()> for Sum {
///     type In = u64;
///     type Out = u64;
///     type Acc = u64;
///     fn start(&self, _: &mut ()) -> u64 { 0 }
///     fn merge(&self, _: &mut (), acc: &mut u64, x: u64) { *acc += x }
///     fn finish(&self, _: &mut (), acc: u64) -> u64 { acc }
/// }
/// ```
pub trait Merge<S>: Send + Sync + 'static {
    /// Input token type (what the split's branch delivers).
    type In: Token;
    /// Output token type.
    type Out: Token;
    /// Per-instance accumulator, kept on the merge thread.
    type Acc: Send + 'static;
    /// Creates the accumulator when the instance's first token (or its end) arrives.
    fn start(&self, thread: &mut S) -> Self::Acc;
    /// Merges one token.
    fn merge(&self, thread: &mut S, acc: &mut Self::Acc, input: Self::In);
    /// Produces the output once every token was merged.
    fn finish(&self, thread: &mut S, acc: Self::Acc) -> Self::Out;
}

/// A merge fused with a split: it collects the tokens of one instance and may post output
/// tokens while inputs still arrive. Its outputs form a new instance, closed by the next
/// merge or stream, so two split-merge stages pipeline.
pub trait Stream<S>: Send + Sync + 'static {
    /// Input token type.
    type In: Token;
    /// Output token type.
    type Out: Token;
    /// Per-instance accumulator.
    type Acc: Send + 'static;
    /// Creates the accumulator when the instance's first token (or its end) arrives.
    fn start(&self, thread: &mut S) -> Self::Acc;
    /// Handles one input; may post outputs with `out.post`.
    fn input(&self, thread: &mut S, acc: &mut Self::Acc, input: Self::In, out: &mut Posted<Self::Out>);
    /// Called once every input arrived; may post the last outputs.
    fn finish(&self, thread: &mut S, acc: Self::Acc, out: &mut Posted<Self::Out>);
    /// Index of the thread (in the collection of the closing merge) that merges this
    /// stream's outputs; evaluated when the first output is posted. Default: the index of
    /// the stream's own thread.
    fn merge_thread(&self, _acc: &Self::Acc, this_thread: usize) -> usize {
        this_thread
    }
}

/// Outputs posted by a stream operation.
#[derive(Debug)]
pub struct Posted<T> {
    pub(crate) items: Vec<T>,
}

impl<T> Posted<T> {
    /// Posts one output token.
    pub fn post(&mut self, token: T) {
        self.items.push(token);
    }
}

/// A merge built from closures: `init` makes the accumulator, `fold` merges one token and
/// `finish` turns the accumulator into the output.
///
/// ```
/// let count = dps::MergeFn::new(|_: &mut ()| 0usize, |_, n: &mut usize, _x: u8| *n += 1, |_, n| n);
/// # let _ = count;
/// ```
pub struct MergeFn<I, O, A, Init, Fold, Fin> {
    init: Init,
    fold: Fold,
    fin: Fin,
    _types: PhantomData<fn(I) -> (O, A)>,
}

impl<I, O, A, Init, Fold, Fin> std::fmt::Debug for MergeFn<I, O, A, Init, Fold, Fin> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MergeFn")
    }
}

impl<I, O, A, Init, Fold, Fin> MergeFn<I, O, A, Init, Fold, Fin> {
    /// Builds a merge from its three closures.
    pub fn new<S>(init: Init, fold: Fold, fin: Fin) -> Self
    where
        Init: Fn(&mut S) -> A,
        Fold: Fn(&mut S, &mut A, I),
        Fin: Fn(&mut S, A) -> O,
    {
        MergeFn { init, fold, fin, _types: PhantomData }
    }
}

impl<S, I, O, A, Init, Fold, Fin> Merge<S> for MergeFn<I, O, A, Init, Fold, Fin>
where
    I: Token,
    O: Token,
    A: Send + 'static,
    Init: Fn(&mut S) -> A + Send + Sync + 'static,
    Fold: Fn(&mut S, &mut A, I) + Send + Sync + 'static,
    Fin: Fn(&mut S, A) -> O + Send + Sync + 'static,
{
    type In = I;
    type Out = O;
    type Acc = A;
    fn start(&self, thread: &mut S) -> A {
        (self.init)(thread)
    }
    fn merge(&self, thread: &mut S, acc: &mut A, input: I) {
        (self.fold)(thread, acc, input)
    }
    fn finish(&self, thread: &mut S, acc: A) -> O {
        (self.fin)(thread, acc)
    }
}

/// A merge that only waits for every token of its instance and outputs `()`: the end of a
/// step that every thread must have done (see [`join`]).
pub struct Join<T>(PhantomData<fn(T)>);

impl<T> std::fmt::Debug for Join<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Join")
    }
}

/// A merge that only waits for every token (of type `T`) of its instance.
///
/// ```
/// let all_done = dps::join::<u64>();
/// # let _ = all_done;
/// ```
pub fn join<T>() -> Join<T> {
    Join(PhantomData)
}

impl<S: 'static, T: Token> Merge<S> for Join<T> {
    type In = T;
    type Out = ();
    type Acc = ();
    fn start(&self, _: &mut S) {}
    fn merge(&self, _: &mut S, _: &mut (), _: T) {}
    fn finish(&self, _: &mut S, _: ()) {}
}
