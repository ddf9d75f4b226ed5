//! The Gantt chart of a layered schedule as PNG: one row per processor, one box per task on
//! it (labelled when wide enough), the redistribution phases in grey.

use anyhow::{Context, Result};
use dps_model::schedule::graph::Family;
use plotters::prelude::*;

use super::report::Outcome;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// The chart as PNG bytes (drawn in memory: only a whole file reaches the disk).
pub(super) fn png(family: &Family, o: &Outcome) -> Result<Vec<u8>> {
    let s = &o.layered.schedule;
    let width = 1200u32;
    let height = (120 + 24 * s.procs.min(64) as u32).min(2000);
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    let labels = std::fs::read(FONT)
        .map(|bytes| {
            plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice())).is_ok()
        })
        .unwrap_or(false);
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let end = s.makespan.max(1e-12);
        let mut builder = ChartBuilder::on(&root);
        builder.margin(12).x_label_area_size(if labels { 40 } else { 0 }).y_label_area_size(if labels {
            50
        } else {
            0
        });
        if labels {
            builder.caption(
                format!("{}: TIME {:.4} s on {} processors", family.root().name, s.makespan, s.procs),
                ("sans-serif", 20),
            );
        }
        let mut chart = builder.build_cartesian_2d(0.0..end, 0.0..s.procs as f64)?;
        if labels {
            chart.configure_mesh().x_desc("time (s)").y_desc("processor").disable_y_mesh().draw()?;
        }
        for ph in s.phases.iter().filter(|ph| ph.time > 0.0) {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(ph.start, 0.0), (ph.start + ph.time, s.procs as f64)],
                RGBColor(200, 200, 200).filled(),
            )))?;
        }
        for (v, pl) in s.placements.iter().enumerate() {
            let colour = Palette99::pick(v).to_rgba();
            for &q in &pl.procs {
                let (y0, y1) = (q as f64 + 0.1, q as f64 + 0.9);
                chart
                    .draw_series(std::iter::once(Rectangle::new([(pl.start, y0), (pl.finish, y1)], colour.filled())))?;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(pl.start, y0), (pl.finish, y1)],
                    BLACK.stroke_width(1),
                )))?;
            }
            let name = &family.root().tasks[v].name;
            let wide = (pl.finish - pl.start) / end * f64::from(width) > 8.0 * name.len() as f64;
            if labels && wide {
                let q = *pl.procs.iter().min().unwrap_or(&0);
                chart.draw_series(std::iter::once(Text::new(
                    name.clone(),
                    (pl.start, q as f64 + 0.7),
                    ("sans-serif", 12),
                )))?;
            }
        }
        root.present().context("cannot draw the Gantt chart")?;
    }
    let image = image::RgbImage::from_raw(width, height, pixels).context("the chart buffer has the wrong size")?;
    let mut png = std::io::Cursor::new(Vec::new());
    image.write_to(&mut png, image::ImageFormat::Png).context("cannot encode the Gantt chart as PNG")?;
    Ok(png.into_inner())
}
