//! The state of a `disks` thread (the thesis's TileServer): one disk's input tiles (in
//! memory, or a tile file behind an LRU tile cache), and its output tiles (in memory, or a
//! tile file written striped like the input, of the generation the run's client chose). A
//! failed write does not end the job: the disk remembers it, writes nothing more, and its
//! commit returns it (so the client reports one error and the old output stays); so does a
//! failed read in the median's run. In a NOALLOC simulation the tiles are left
//! out (`Tiles::Absent`): the cache and the emulated disk's waits are kept, so that the
//! prediction is PDEXEC's.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Result};
use dps::{Bulk, MaybeBulk};

use crate::layout::{TileId, Tiling};
use crate::raster::Raster;
use crate::store::{self, DiskReader, DiskWriter, Generation, Meta};

/// An input tile, shared by the requests that read it (and the disk's cache); its buffer
/// returns to the runtime's pool when the last one is done with it.
pub type Tile = Arc<Bulk<u8>>;

/// Where a disk's tiles are.
#[derive(Debug)]
pub enum Tiles {
    /// Held in memory, by local index (the preloaded runs).
    Memory(Vec<Tile>),
    /// In `DIR/disk<k>/NAME.tiles`, opened on the first read.
    File {
        /// The store's directory.
        dir: PathBuf,
        /// The stored image's name.
        name: String,
        /// The open file.
        reader: Option<DiskReader>,
    },
    /// Left out (NOALLOC): only the tiles' sizes count; `files`: they stand for a tile
    /// file (cached, and read at the emulated disk's speed), else for tiles in memory.
    Absent {
        /// Whether the tiles stand for a file.
        files: bool,
    },
}

/// Where a disk's output tiles go.
#[derive(Debug)]
pub enum Sink {
    /// Kept in memory, by local index (a bulk buffer goes back to the runtime's pool when
    /// the next run resets it).
    Memory(Vec<Option<Bulk<u8>>>),
    /// Written to `DIR/disk<k>/NAME.<generation>.tiles` (unnamed until committed).
    File {
        /// The store's directory.
        dir: PathBuf,
        /// The output image's name.
        name: String,
        /// The run's generation (set by [`Disk::reset`]); the output has the input's
        /// geometry.
        generation: Option<Generation>,
        /// The file being written, created on the first write.
        writer: Option<DiskWriter>,
        /// The run's first failed write, named (nothing is written after it).
        failure: Option<String>,
    },
    /// Dropped (NOALLOC), after the emulated disk's wait if `files`.
    Absent {
        /// Whether the output stands for a file.
        files: bool,
    },
}

/// Counters of a disk thread, reported with the tokens that caused them.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadCost {
    /// Tiles read from the file (cache misses); 0 for tiles in memory.
    pub reads: u32,
    /// Time those reads took, ns.
    pub read_ns: u64,
}

/// An emulated slow disk (the thesis's were 18.5 ms and 3.3 MB/s): each tile read from or
/// written to a file also waits `latency + bytes / rate`, so that I/O hiding can be shown on
/// a machine whose files are in the page cache.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Throttle {
    /// Seconds per access.
    pub latency_s: f64,
    /// Bytes per second (0: no limit).
    pub bytes_per_s: f64,
}

impl Throttle {
    fn wait(&self, bytes: usize) {
        let rate = if self.bytes_per_s > 0.0 { bytes as f64 / self.bytes_per_s } else { 0.0 };
        let s = self.latency_s + rate;
        if s > 0.0 {
            // Under simulation, charged to the operation instead of slept. The options keep
            // `s` in range; past it, the longest wait rather than a panic.
            dps::pause(std::time::Duration::try_from_secs_f64(s).unwrap_or(std::time::Duration::MAX));
        }
    }
}

/// A `disks` thread.
#[derive(Debug)]
pub struct Disk {
    /// The disk's index.
    pub index: usize,
    /// The image's tiling and pixel format.
    pub meta: Meta,
    /// Its input tiles.
    pub tiles: Tiles,
    /// Its output tiles.
    pub sink: Sink,
    /// Recently read tiles, most recent last (file-backed input only).
    cache: VecDeque<(usize, Tile)>,
    /// Capacity of the cache, tiles (0: no cache).
    cache_tiles: usize,
    /// The emulated disk's speed (file-backed tiles only).
    throttle: Throttle,
    /// The run's first failed read, named (see [`tile_or_remember`](Self::tile_or_remember)).
    read_failure: Option<String>,
}

impl Disk {
    /// Disk `index` holding its tiles of `image` in memory.
    pub fn preloaded(index: usize, meta: Meta, image: &Raster) -> Disk {
        let tiling = meta.tiling();
        // Row-major order is local-index order on each disk.
        let tiles: Vec<Tile> = tiling
            .tiles()
            .filter(|&id| tiling.disk(id) == index)
            .map(|id| Arc::new(Bulk(store::cut_tile(image, &tiling, id))))
            .collect();
        let outputs = vec![None; tiles.len()];
        Disk {
            index,
            meta,
            tiles: Tiles::Memory(tiles),
            sink: Sink::Memory(outputs),
            cache: VecDeque::new(),
            cache_tiles: 0,
            throttle: Throttle::default(),
            read_failure: None,
        }
    }

    /// Disk `index` of the stored image `name` in `dir`, writing `out_name` beside it, at the
    /// speed of `throttle`.
    pub fn stored(
        index: usize,
        meta: Meta,
        dir: PathBuf,
        names: (&str, &str),
        cache_tiles: usize,
        throttle: Throttle,
    ) -> Disk {
        let tiles = Tiles::File { dir: dir.clone(), name: names.0.into(), reader: None };
        let sink = Sink::File { dir, name: names.1.into(), generation: None, writer: None, failure: None };
        Disk { index, meta, tiles, sink, cache: VecDeque::new(), cache_tiles, throttle, read_failure: None }
    }

    /// Disk `index` whose tiles are left out, for a NOALLOC simulation (`files`: they
    /// stand for a tile file read through a cache of `cache_tiles` at the speed of
    /// `throttle`, else for tiles in memory, which use neither).
    pub fn absent(index: usize, meta: Meta, files: bool, cache_tiles: usize, throttle: Throttle) -> Disk {
        Disk {
            index,
            meta,
            tiles: Tiles::Absent { files },
            sink: Sink::Absent { files },
            cache: VecDeque::new(),
            cache_tiles,
            throttle,
            read_failure: None,
        }
    }

    /// The tiling.
    pub fn tiling(&self) -> Tiling {
        self.meta.tiling()
    }

    /// Input tile `id` (on this disk), from memory, the cache or the file (empty when the
    /// tiles are absent); a failed read is the file's name and the OS error, in one line,
    /// for the graph to carry to the client (the job does not panic).
    pub fn tile(&mut self, id: TileId) -> Result<Tile, String> {
        self.try_tile(id).map(|(tile, _)| tile).map_err(|e| format!("{e:#}"))
    }

    /// Input tile `id` for a run whose output is committed: a failed read is remembered
    /// for [`commit`](Self::commit) to return (so the client reports one error, naming the
    /// file, and the output is not committed), and zeros stand in for it and for every
    /// tile after it, which are not read.
    pub fn tile_or_remember(&mut self, id: TileId) -> (Tile, ReadCost) {
        if self.read_failure.is_none() {
            match self.try_tile(id) {
                Ok(tile) => return tile,
                Err(e) => self.read_failure = Some(format!("{e:#}")),
            }
        }
        (Arc::new(Bulk(vec![0; self.meta.tile_bytes()])), ReadCost::default())
    }

    fn try_tile(&mut self, id: TileId) -> Result<(Tile, ReadCost)> {
        let tiling = self.tiling();
        assert_eq!(tiling.disk(id), self.index, "tile {id:?} asked of the wrong disk");
        let local = tiling.local(id);
        let bytes = self.meta.tile_bytes();
        match &mut self.tiles {
            Tiles::Memory(tiles) => return Ok((tiles[local].clone(), ReadCost::default())),
            Tiles::Absent { files: false } => return Ok((Arc::default(), ReadCost::default())),
            Tiles::File { .. } | Tiles::Absent { files: true } => {}
        }
        if let Some(pos) = self.cache.iter().position(|(l, _)| *l == local) {
            let hit = self.cache.remove(pos).expect("found");
            self.cache.push_back(hit.clone());
            return Ok((hit.1, ReadCost::default()));
        }
        let start = Instant::now();
        let slot = match &mut self.tiles {
            Tiles::File { dir, name, reader } => {
                if reader.is_none() {
                    *reader = Some(DiskReader::open(dir, name, &self.meta, self.index)?);
                }
                Arc::new(reader.as_ref().expect("opened").read(local)?)
            }
            Tiles::Absent { .. } => Arc::default(),
            Tiles::Memory(_) => unreachable!("tiles in memory are returned above"),
        };
        self.throttle.wait(bytes);
        let cost = ReadCost { reads: 1, read_ns: start.elapsed().as_nanos() as u64 };
        if self.cache_tiles > 0 {
            if self.cache.len() == self.cache_tiles {
                self.cache.pop_front();
            }
            self.cache.push_back((local, slot.clone()));
        }
        Ok((slot, cost))
    }

    /// Stores output tile `id`; returns the time the write took, ns. A write that fails is
    /// remembered for [`commit`](Self::commit) to return.
    ///
    /// # Panics
    /// If the tile is written twice, or to a file before [`reset`](Self::reset).
    pub fn write(&mut self, id: TileId, slot: MaybeBulk<u8>) -> u64 {
        let start = Instant::now();
        let local = self.tiling().local(id);
        match &mut self.sink {
            Sink::Memory(outputs) => {
                assert!(outputs[local].is_none(), "output tile {id:?} written twice");
                outputs[local] = Some(slot.into_data().expect("an output tile held in memory has its pixels"));
            }
            Sink::Absent { files } => {
                if *files {
                    self.throttle.wait(slot.len());
                }
            }
            Sink::File { dir, name, generation, writer, failure } => {
                if failure.is_none() {
                    let written = match writer {
                        Some(w) => w.write(local, &slot),
                        None => DiskWriter::create(dir, name, &output_meta(&self.meta, *generation), self.index)
                            .and_then(|w| writer.insert(w).write(local, &slot)),
                    };
                    if let Err(e) = written {
                        *failure = Some(format!("{e:#}"));
                        *writer = None;
                    }
                }
                self.throttle.wait(slot.len());
            }
        }
        start.elapsed().as_nanos() as u64
    }

    /// Output tile `id`, once written (and committed, for a file).
    ///
    /// # Errors
    /// A file that cannot be read back: its name and the OS error, in one line.
    ///
    /// # Panics
    /// If it was not written.
    pub fn output(&self, id: TileId) -> Result<Vec<u8>, String> {
        let local = self.tiling().local(id);
        match &self.sink {
            Sink::Memory(outputs) => Ok(outputs[local].as_ref().map(|t| t.to_vec()).unwrap_or_else(|| {
                panic!("output tile {id:?} was never written");
            })),
            Sink::File { dir, name, generation, .. } => {
                let meta = output_meta(&self.meta, *generation);
                DiskReader::open(dir, name, &meta, self.index)
                    .and_then(|r| r.read(local))
                    .map(Bulk::into_inner)
                    .map_err(|e| format!("{e:#}"))
            }
            Sink::Absent { .. } => panic!("output tile {id:?} was left out (NOALLOC)"),
        }
    }

    /// Ends a run: commits the output file (if any tile of it was written: a disk with no
    /// tiles writes an empty file all the same). The image is not committed until the
    /// client has every disk's file and switches its metadata.
    ///
    /// # Errors
    /// The run's failed read or write, or the failed commit, naming the file.
    pub fn commit(&mut self) -> Result<()> {
        if let Some(why) = self.read_failure.take() {
            if let Sink::File { writer, .. } = &mut self.sink {
                *writer = None; // never named
            }
            return Err(anyhow!(why));
        }
        match &mut self.sink {
            Sink::Memory(_) | Sink::Absent { .. } => Ok(()),
            Sink::File { dir, name, generation, writer, failure } => {
                if let Some(why) = failure.take() {
                    return Err(anyhow!(why));
                }
                let w = match writer.take() {
                    Some(w) => w,
                    None => DiskWriter::create(dir, name, &output_meta(&self.meta, *generation), self.index)?,
                };
                w.commit()
            }
        }
    }

    /// Clears the in-memory output, the cache and an unfinished output file before a new
    /// run, whose output file is of `generation`.
    pub fn reset(&mut self, generation: Generation) {
        match &mut self.sink {
            Sink::Memory(outputs) => outputs.iter_mut().for_each(|o| *o = None),
            Sink::File { generation: now, writer, failure, .. } => {
                *now = Some(generation);
                *writer = None;
                *failure = None;
            }
            Sink::Absent { .. } => {}
        }
        self.cache.clear();
        self.read_failure = None;
    }
}

/// The output's metadata: the input's geometry, in files of the run's generation.
fn output_meta(input: &Meta, generation: Option<Generation>) -> Meta {
    input.with_generation(generation.expect("a run's output generation is set by reset"))
}
