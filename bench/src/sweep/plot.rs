//! PNG plots of a sweep: time against ranks and speedup against ranks (with the ideal line,
//! and the published speedups and model curve where the experiment lists them), one series
//! per parameter point. Text uses DejaVu Sans (Debian's fonts-dejavu-core).

use std::path::{Path, PathBuf};

use dps_harness::OutputFile;
use std::sync::Once;

use anyhow::{Context, Result};
use plotters::prelude::*;

use super::config::{self, Experiment};
use super::{References, Row};

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
static REGISTER: Once = Once::new();

fn register_font() -> bool {
    REGISTER.call_once(|| {
        if let Ok(bytes) = std::fs::read(FONT) {
            let _ =
                plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice()));
        }
    });
    Path::new(FONT).exists()
}

type Series = Vec<(String, Vec<(f64, f64)>)>;

/// The published values drawn on the speedup plot: the paper's measured speedup, and its
/// model's.
const PUBLISHED_SPEEDUPS: [&str; 2] = ["S", "model S"];

/// The published speedups of `e`, one series per key of [`PUBLISHED_SPEEDUPS`] (and per
/// other parameter the published rows match on): points at the rows' `ranks`.
fn published_speedups(e: &Experiment) -> Series {
    let mut series: Series = Vec::new();
    for p in &e.published {
        let Some(ranks) = p.when.get("ranks").and_then(toml::Value::as_integer) else { continue };
        let others: Vec<String> =
            p.when.iter().filter(|(k, _)| *k != "ranks").map(|(k, v)| format!(" {k}={}", config::arg(v))).collect();
        for key in PUBLISHED_SPEEDUPS {
            let Some(value) = p.values.get(key).and_then(|v| config::arg(v).parse::<f64>().ok()) else { continue };
            let label = format!("paper: {key}{}", others.concat());
            match series.iter_mut().find(|(l, _)| *l == label) {
                Some((_, points)) => points.push((ranks as f64, value)),
                None => series.push((label, vec![(ranks as f64, value)])),
            }
        }
    }
    series
}

/// Draws the time and speedup plots into their files (`time.png`, `speedup.png`) when the
/// experiment has several rank counts; returns the paths written. A file not drawn is
/// dropped, which removes its temporary file.
pub(crate) fn draw(
    e: &Experiment,
    rows: &[Row],
    references: &References,
    [time_png, speed_png]: [OutputFile; 2],
) -> Result<Vec<PathBuf>> {
    if e.ranks.len() < 2 || !register_font() {
        return Ok(Vec::new());
    }
    let mut labels: Vec<Vec<(String, String)>> = Vec::new();
    for r in rows {
        if !labels.contains(&r.params) {
            labels.push(r.params.clone());
        }
    }
    let name = |p: &[(String, String)]| {
        if p.is_empty() {
            e.name.clone()
        } else {
            p.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        }
    };
    let mut times: Series = Vec::new();
    let mut speedups: Series = Vec::new();
    for p in &labels {
        let mine: Vec<&Row> = rows.iter().filter(|r| &r.params == p && r.seconds.is_some()).collect();
        let base = super::table::reference_of(references, p)
            .or_else(|| mine.iter().find(|r| r.ranks == 1).and_then(|r| r.seconds));
        times.push((name(p), mine.iter().map(|r| (r.ranks as f64, r.seconds.unwrap())).collect()));
        if let Some(b) = base {
            speedups.push((name(p), mine.iter().map(|r| (r.ranks as f64, b / r.seconds.unwrap())).collect()));
        }
    }
    let max_ranks = *e.ranks.iter().max().unwrap() as f64;
    let mut out = vec![time_png.path().to_path_buf()];
    let title = format!("{}: time", e.name);
    let none = Series::new();
    let time = Chart { title: &title, y_label: "time (s)", series: &times, published: &none, max_ranks, ideal: false };
    time_png.write_and_commit(&time.png()?)?;
    if !speedups.is_empty() {
        out.push(speed_png.path().to_path_buf());
        let against = if e.reference.is_some() { "speedup vs serial" } else { "speedup vs 1 rank" };
        let (title, published) = (format!("{}: {against}", e.name), published_speedups(e));
        let speedup =
            Chart { title: &title, y_label: against, series: &speedups, published: &published, max_ranks, ideal: true };
        speed_png.write_and_commit(&speedup.png()?)?;
    }
    Ok(out)
}

/// Width and height of a plot, in pixels.
const SIZE: (u32, u32) = (800, 500);

/// One plot: its series against ranks, the published ones (drawn dashed, with hollow
/// marks), and the ideal speedup line if `ideal`.
struct Chart<'a> {
    title: &'a str,
    y_label: &'a str,
    series: &'a Series,
    published: &'a Series,
    max_ranks: f64,
    ideal: bool,
}

impl Chart<'_> {
    /// The chart as PNG bytes: drawn into memory, so that only a complete file reaches the
    /// disk.
    fn png(&self) -> Result<Vec<u8>> {
        let mut pixels = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
        self.draw(&mut pixels)?;
        let image = image::RgbImage::from_raw(SIZE.0, SIZE.1, pixels).context("the plot buffer has the wrong size")?;
        let mut png = std::io::Cursor::new(Vec::new());
        image.write_to(&mut png, image::ImageFormat::Png).context("cannot encode the plot as PNG")?;
        Ok(png.into_inner())
    }

    fn draw(&self, pixels: &mut [u8]) -> Result<()> {
        let Chart { title, y_label, series, published, max_ranks, ideal } = *self;
        let y_max = series
            .iter()
            .chain(published)
            .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
            .fold(if ideal { max_ranks } else { 0.0 }, f64::max)
            * 1.1;
        let root = BitMapBackend::with_buffer(pixels, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.5..max_ranks + 0.5, 0.0..y_max.max(1e-9))?;
        // Ranks are whole: a label at each integer, none between.
        let whole = |x: &f64| if x.fract() == 0.0 { format!("{x}") } else { String::new() };
        chart
            .configure_mesh()
            .x_desc("ranks")
            .y_desc(y_label)
            .x_labels(max_ranks as usize + 2)
            .x_label_formatter(&whole)
            .draw()?;
        if ideal {
            chart
                .draw_series(LineSeries::new([(1.0, 1.0), (max_ranks, max_ranks)], BLACK.stroke_width(1)))?
                .label("ideal")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
        }
        for (i, (label, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        }
        for (i, (label, pts)) in published.iter().enumerate() {
            let color = Palette99::pick(series.len() + i).to_rgba();
            chart
                .draw_series(DashedLineSeries::new(pts.iter().copied(), 6, 4, color.stroke_width(2)))?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(1)));
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 5, color.stroke_width(2))))?;
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        root.present().context("cannot draw the plot")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_speedups_are_one_series_per_key_at_the_rows_ranks() {
        let text = "name = \"e\"\ntitle = \"t\"\napp = \"a\"\nranks = [1, 4]\npublished = [\n\
                    { match = { ranks = 1 }, values = { S = \"1.0\", \"model S\" = \"1.00\", note = \"x\" } },\n\
                    { match = { ranks = 4 }, values = { S = \"3.71\" } },\n\
                    { match = { block = 8 }, values = { S = \"9\" } },\n]\n";
        let e: Experiment = toml::from_str(text).unwrap();
        let series = published_speedups(&e);
        assert_eq!(
            series,
            vec![
                ("paper: S".to_string(), vec![(1.0, 1.0), (4.0, 3.71)]),
                ("paper: model S".to_string(), vec![(1.0, 1.0)])
            ],
            "rows without ranks, and values that are not S or model S, are not drawn"
        );
    }
}
