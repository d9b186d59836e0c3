//! SVG charts for results people would rather see than read.

use anyhow::{anyhow, Result};
use plotters::prelude::*;

/// One bar group: a label and one value per series.
pub struct Group {
    /// Label under the group (a variant).
    pub label: String,
    /// Values, one per series.
    pub values: Vec<f64>,
}

/// Draw a grouped bar chart to `path` (SVG). Bars are horizontal, one group per row,
/// so that long variant labels ("mq-deadline.variant=head-request") read easily.
pub fn bars(
    path: &str,
    title: &str,
    x_label: &str,
    series: &[String],
    groups: &[Group],
) -> Result<()> {
    let k = series.len().max(1);
    let longest = groups.iter().map(|g| g.label.len()).max().unwrap_or(8) as u32;
    let label_area = 24 + 7 * longest;
    let height = 120 + (groups.len() * (12 + 18 * k)) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640 + label_area, height.max(300)))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
        let max = groups
            .iter()
            .flat_map(|g| g.values.iter().copied())
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let n = groups.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0.0..max * 1.1, 0.0..n)
            .map_err(|e| anyhow!("plot: {e}"))?;
        let labels: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
        // Group i occupies the band [n-1-i, n-i], so the first variant is on top.
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(groups.len() * 2 + 1)
            .y_label_formatter(&|y| {
                let band = y.floor();
                if (y - band - 0.5).abs() < 0.01 && band >= 0.0 && (band as usize) < labels.len() {
                    labels[labels.len() - 1 - band as usize].clone()
                } else {
                    String::new()
                }
            })
            .x_label_formatter(&|v| format!("{v:.0}"))
            .x_desc(x_label)
            .draw()
            .map_err(|e| anyhow!("plot: {e}"))?;
        let kf = k as f64;
        for (s, name) in series.iter().enumerate() {
            let color = Palette99::pick(s).to_rgba();
            let rects = groups.iter().enumerate().map(move |(i, g)| {
                let h = 0.8 / kf;
                let y1 = n - i as f64 - 0.1 - h * s as f64;
                Rectangle::new([(0.0, y1 - h * 0.95), (g.values[s], y1)], color.filled())
            });
            chart
                .draw_series(rects)
                .map_err(|e| anyhow!("plot: {e}"))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("plot: {e}"))?;
        root.present().map_err(|e| anyhow!("plot: {e}"))?;
    }
    // Rendered in memory and written whole, as every output file.
    super::output::write_file(path, svg.as_bytes())
}

/// Draw CDF curves (x, cumulative fraction) to `path` (SVG), one line per series.
/// When the x values span more than a factor of 20 (latencies usually do), the x axis
/// is logarithmic.
pub fn cdf_lines(
    path: &str,
    title: &str,
    x_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    let svg = cdf_svg(title, x_label, series)?;
    // Rendered in memory and written whole, as every output file.
    super::output::write_file(path, svg.as_bytes())
}

/// The chart of [`cdf_lines`] as SVG text.
pub fn cdf_svg(title: &str, x_label: &str, series: &[(String, Vec<(f64, f64)>)]) -> Result<String> {
    let xs = || series.iter().flat_map(|(_, v)| v.iter().map(|p| p.0));
    let xmax = xs().fold(0.0f64, f64::max).max(1e-9);
    let xmin = xs().filter(|x| *x > 0.0).fold(f64::INFINITY, f64::min);
    let log = xmin.is_finite() && xmax / xmin > 20.0;
    // On a log axis the data are drawn as log10(x) and the labels turned back.
    let tx = |x: f64| if log { x.max(xmin).log10() } else { x };
    let (lo, hi) = if log {
        (xmin.log10().floor(), xmax.log10().ceil())
    } else {
        (0.0, xmax * 1.02)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(lo..hi, 0.0..1.0)
            .map_err(|e| anyhow!("plot: {e}"))?;
        let x_desc = if log {
            format!("{x_label}, log scale")
        } else {
            x_label.to_string()
        };
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .x_label_formatter(&|v| {
                let x = if log { 10f64.powf(*v) } else { *v };
                if x >= 100.0 || x == x.round() {
                    format!("{x:.0}")
                } else {
                    format!("{x:.2}")
                }
            })
            .y_desc("fraction of requests")
            .draw()
            .map_err(|e| anyhow!("plot: {e}"))?;
        for (s, (name, pts)) in series.iter().enumerate() {
            let color = Palette99::pick(s).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|&(x, y)| (tx(x), y)),
                    color.stroke_width(2),
                ))
                .map_err(|e| anyhow!("plot: {e}"))?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("plot: {e}"))?;
        root.present().map_err(|e| anyhow!("plot: {e}"))?;
    }
    Ok(svg)
}
