//! What a run checks and shows while it runs: the check against the serial reference, and
//! progress on a terminal. The record it prints is in [`crate::record`].

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::kernel::{self, Geometry};
use crate::world::{Source, World};

/// Runs up to this many cell updates are verified against the byte-per-cell reference
/// (which shares no code with the bit kernel); larger ones against the bit kernel on one
/// thread, itself tested against the byte-per-cell reference.
const NAIVE_CELL_UPDATES: f64 = 2e7;

/// Whether [`verify`] uses the byte-per-cell reference for a `width × height` world after
/// `generations` (a run of 0 generations still builds the initial world).
pub(crate) fn uses_naive(width: usize, height: usize, generations: u64) -> bool {
    width as f64 * height as f64 * generations.max(1) as f64 <= NAIVE_CELL_UPDATES
}

/// A world as a run produced it.
pub(crate) struct Observed<'a> {
    /// The oldest and newest generation of its parts.
    pub generations: (u64, u64),
    /// Its size.
    pub width: usize,
    /// Its size.
    pub height: usize,
    /// `height` packed rows.
    pub cells: &'a [u64],
    /// Live cells, as the run counted them (the `population` graph).
    pub population: u64,
}

/// Checks `got` against an independently computed serial reference of the world `source`
/// after `generations`: the generation the run says it is at, the size, every cell and the
/// population. Fails closed: anything that does not match, or cannot be compared, is a
/// failure. Returns the reference used, or what differs.
pub(crate) fn verify(
    source: &Source,
    wrap: bool,
    generations: u64,
    got: &Observed<'_>,
) -> Result<&'static str, String> {
    let (w, h) = (source.width(), source.height());
    let words = w.div_ceil(64);
    if got.generations != (generations, generations) {
        return Err(format!("the world is at generations {:?}, not {generations}", got.generations));
    }
    if (got.width, got.height) != (w, h) || got.cells.len() != h * words {
        return Err(format!(
            "the world gathered is {}x{} in {} words, not {w}x{h} in {}",
            got.width,
            got.height,
            got.cells.len(),
            h * words
        ));
    }
    let padding = Geometry::new(w, false).last_mask();
    if let Some(y) = (0..h).find(|y| got.cells[y * words + words - 1] & !padding != 0) {
        return Err(format!("row {y} has live cells beyond the width {w}"));
    }
    let expected_population = source.population();
    let (reference, differs, population) = if uses_naive(w, h, generations) {
        let mut bytes = initial_cells(source);
        check_initial("byte-per-cell", bytes.iter().map(|&b| u64::from(b)).sum(), expected_population)?;
        for _ in 0..generations {
            bytes = kernel::naive_step(w, h, wrap, &bytes);
        }
        let differs = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .find(|&(x, y)| kernel::get(&got.cells[y * words..(y + 1) * words], x) != (bytes[y * w + x] == 1));
        ("naive", differs, bytes.iter().map(|&b| u64::from(b)).sum())
    } else {
        let mut world = World::new(source, wrap, 1);
        check_initial("bit-serial", world.slab.population(), expected_population)?;
        world.advance(generations);
        let rows = world.slab.rows();
        let differs = (0..h).find(|&y| rows[y * words..(y + 1) * words] != got.cells[y * words..(y + 1) * words]);
        let differs = differs.map(|y| {
            let x = (0..w).find(|&x| kernel::get(&rows[y * words..], x) != kernel::get(&got.cells[y * words..], x));
            (x.unwrap_or(0), y)
        });
        ("bit-serial", differs, world.slab.population())
    };
    if let Some((x, y)) = differs {
        return Err(format!("cell ({x}, {y}) differs from the {reference} reference after {generations} generations"));
    }
    if got.population != population {
        return Err(format!(
            "the population is {}, the {reference} reference's {population} after {generations} generations",
            got.population
        ));
    }
    Ok(reference)
}

/// The reference's initial world must hold the cells of the input.
fn check_initial(reference: &str, population: u64, expected: u64) -> Result<(), String> {
    if population == expected {
        return Ok(());
    }
    Err(format!("the {reference} reference starts with {population} live cells, the input has {expected}"))
}

/// The initial world, one byte per cell, built from the source without the slabs the run
/// fills: a pattern cell by cell, a random world from its rows as drawn.
fn initial_cells(source: &Source) -> Vec<u8> {
    let (w, h) = (source.width(), source.height());
    let mut bytes = vec![0u8; w * h];
    match source {
        Source::Pattern { pattern, at, .. } => {
            for (py, runs) in pattern.live_rows() {
                for px in runs.iter().flat_map(Clone::clone) {
                    // Inside the world: `Source::pattern` checked the fit.
                    bytes[(at.1 + py) * w + at.0 + px] = 1;
                }
            }
        }
        Source::Random { .. } => {
            let mut row = vec![0u64; w.div_ceil(64)];
            for (y, line) in bytes.chunks_mut(w).enumerate() {
                source.fill_row(y, &mut row);
                for (x, cell) in line.iter_mut().enumerate() {
                    *cell = u8::from(kernel::get(&row, x));
                }
            }
        }
    }
    bytes
}

/// A bar of the generations run so far on standard error, on a terminal and without
/// `--json` only (a log or a JSON reader gets no progress lines).
pub(crate) fn progress_bar(total: u64, json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("generation {pos} of {len} [{bar:40}] {elapsed} (eta {eta})")
        .expect("the template is valid")
        .progress_chars("=> ");
    ProgressBar::new(total).with_style(style)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rle::Pattern;

    fn glider_in(width: usize, height: usize) -> Source {
        Source::pattern(width, height, Arc::new(Pattern::from_rows(&[".o.", "..o", "ooo"])), (1, 1)).unwrap()
    }

    /// The world after `generations` as the serial reference computes it.
    fn truth(source: &Source, generations: u64) -> (Vec<u64>, u64) {
        let mut world = World::new(source, false, 1);
        world.advance(generations);
        let cells = world.slab.rows().to_vec();
        (cells, world.slab.population())
    }

    fn observed(source: &Source, generations: u64, cells: &[u64], population: u64) -> Result<&'static str, String> {
        let got = Observed {
            generations: (generations, generations),
            width: source.width(),
            height: source.height(),
            cells,
            population,
        };
        verify(source, false, generations, &got)
    }

    #[test]
    fn a_right_world_passes_against_both_references() {
        for (source, reference) in [(glider_in(10, 10), "naive"), (glider_in(3000, 3000), "bit-serial")] {
            let (cells, population) = truth(&source, 4);
            assert_eq!(observed(&source, 4, &cells, population), Ok(reference));
        }
    }

    #[test]
    fn a_world_that_lost_its_pattern_fails() {
        for source in [glider_in(10, 10), glider_in(3000, 3000)] {
            let words = source.width().div_ceil(64);
            let empty = vec![0u64; words * source.height()];
            let e = observed(&source, 4, &empty, 0).unwrap_err();
            assert!(e.contains("differs"), "{e}");
        }
    }

    #[test]
    fn anything_that_does_not_match_fails() {
        let source = glider_in(70, 10);
        let (cells, population) = truth(&source, 3);
        // The run counted other generations than asked for.
        let e = verify(
            &source,
            false,
            4,
            &Observed { generations: (3, 3), width: 70, height: 10, cells: &cells, population },
        )
        .unwrap_err();
        assert!(e.contains("generations (3, 3), not 4"), "{e}");
        // Too few rows gathered.
        assert!(observed(&source, 3, &cells[..cells.len() - 2], population).unwrap_err().contains("words"));
        // A live bit past the width.
        let mut padded = cells.clone();
        padded[1] |= 1 << 63;
        assert!(observed(&source, 3, &padded, population).unwrap_err().contains("beyond the width"));
        // The population graph disagrees with the cells.
        assert!(observed(&source, 3, &cells, population + 1).unwrap_err().contains("population"));
    }

    #[test]
    fn a_pattern_that_does_not_fit_is_no_source() {
        let glider = Arc::new(Pattern::from_rows(&[".o.", "..o", "ooo"]));
        for at in [(0, usize::MAX - 1), (usize::MAX, 0), (8, 0), (0, 8)] {
            assert!(Source::pattern(10, 10, glider.clone(), at).is_err(), "{at:?}");
        }
        assert_eq!(Source::pattern(10, 10, glider, (7, 7)).unwrap().population(), 5);
    }
}
