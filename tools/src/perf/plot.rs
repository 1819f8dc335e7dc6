//! `--plot FILE.svg`: latency (t_median) and bandwidth (MB/s) against
//! message size, ours and the TCP baseline, log2 size axis. SVG only:
//! text is left to the viewer's fonts, so nothing is needed at build or
//! run time but the file.

use std::path::Path;

use plotters::prelude::*;

use super::output::Report;
use super::proto::size_text;
use super::Error;

const OURS: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const TCP: RGBColor = RGBColor(0xd6, 0x27, 0x28);

fn err(e: impl std::fmt::Display) -> Error {
    Error(format!("--plot: {e}"))
}

/// Log axis bounds around positive values (a decade of margin).
fn bounds(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = vals
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return (0.1, 10.0);
    }
    (lo / 2.0, hi * 2.0)
}

type Series = Vec<(f64, f64)>;

/// An axis label: no decimals on large values, three significant digits
/// on small ones.
fn fmt_num(v: &f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let decimals = (-a.log10().floor()) as usize + 2;
        format!("{v:.decimals$}")
    }
}

fn panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    series: &[(&str, RGBColor, Series)],
    sizes: (f64, f64),
    legend: SeriesLabelPosition,
) -> Result<(), Error> {
    let (ylo, yhi) = bounds(series.iter().flat_map(|(_, _, s)| s.iter().map(|p| p.1)));
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (sizes.0..sizes.1).log_scale().base(2.0),
            (ylo..yhi).log_scale(),
        )
        .map_err(err)?;
    let fmt_size = |v: &f64| size_text(v.round().max(1.0) as u64);
    chart
        .configure_mesh()
        .x_desc("message size")
        .y_desc(y_desc)
        .x_label_formatter(&fmt_size)
        .y_label_formatter(&fmt_num)
        .draw()
        .map_err(err)?;
    for (name, color, pts) in series {
        if pts.is_empty() {
            continue;
        }
        let c = *color;
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// Draws the report's rows into `path`.
pub fn draw(path: &Path, rep: &Report) -> Result<(), Error> {
    let rows = &rep.results;
    if rows.is_empty() {
        return Err(err("no results to draw"));
    }
    let pick = |f: &dyn Fn(&super::stats::Figures) -> Option<f64>, base: bool| -> Series {
        rows.iter()
            .filter_map(|r| {
                let fig = if base {
                    &r.baseline.as_ref()?.figures
                } else {
                    &r.ours
                };
                Some((r.ours.size as f64, f(fig)?))
            })
            .filter(|p| p.1 > 0.0)
            .collect()
    };
    let lat = |f: &super::stats::Figures| f.t_median_us;
    let bw = |f: &super::stats::Figures| f.mb_per_s;
    let ours_name = format!("dat-perf ({})", rep.ia);
    let lo = rows.iter().map(|r| r.ours.size).min().unwrap_or(1) as f64;
    let hi = rows.iter().map(|r| r.ours.size).max().unwrap_or(1) as f64;
    let sizes = if lo == hi {
        (lo / 2.0, hi * 2.0)
    } else {
        (lo, hi)
    };
    let title = format!(
        "{} {}: {}",
        rep.test,
        rep.mode.map_or("", super::proto::mode_name),
        rep.latency
    );
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (left, right) = root.split_horizontally(600);
    panel(
        &left,
        &format!("latency (t_median; {title})"),
        "microseconds",
        &[
            (&ours_name, OURS, pick(&lat, false)),
            ("TCP baseline", TCP, pick(&lat, true)),
        ],
        sizes,
        SeriesLabelPosition::UpperLeft,
    )?;
    panel(
        &right,
        "bandwidth",
        "MB/s (10^6 bytes)",
        &[
            (&ours_name, OURS, pick(&bw, false)),
            ("TCP baseline", TCP, pick(&bw, true)),
        ],
        sizes,
        SeriesLabelPosition::LowerRight,
    )?;
    root.present().map_err(err)?;
    Ok(())
}
