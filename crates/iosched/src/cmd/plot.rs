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

/// Draw a grouped bar chart to `path` (SVG).
pub fn bars(
    path: &str,
    title: &str,
    y_label: &str,
    series: &[String],
    groups: &[Group],
) -> Result<()> {
    let width = (160 + groups.len() * (40 + 36 * series.len().max(1))) as u32;
    let root = SVGBackend::new(path, (width.max(640), 420)).into_drawing_area();
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
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n, 0.0..max * 1.1)
        .map_err(|e| anyhow!("plot: {e}"))?;
    let labels: Vec<String> = groups.iter().map(|g| g.label.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.01 && i < labels.len() {
                labels[i].clone()
            } else {
                String::new()
            }
        })
        .y_desc(y_label)
        .draw()
        .map_err(|e| anyhow!("plot: {e}"))?;
    let k = series.len().max(1) as f64;
    for (s, name) in series.iter().enumerate() {
        let color = Palette99::pick(s).to_rgba();
        let rects = groups.iter().enumerate().map(move |(i, g)| {
            let w = 0.8 / k;
            let x0 = i as f64 + 0.1 + w * s as f64;
            Rectangle::new([(x0, 0.0), (x0 + w * 0.95, g.values[s])], color.filled())
        });
        chart
            .draw_series(rects)
            .map_err(|e| anyhow!("plot: {e}"))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("plot: {e}"))?;
    root.present().map_err(|e| anyhow!("plot: {e}"))?;
    Ok(())
}

/// Draw CDF curves (x, cumulative fraction) to `path` (SVG), one line per series.
pub fn cdf_lines(
    path: &str,
    title: &str,
    x_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
    let xmax = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..xmax * 1.02, 0.0..1.0)
        .map_err(|e| anyhow!("plot: {e}"))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc("fraction of requests")
        .draw()
        .map_err(|e| anyhow!("plot: {e}"))?;
    for (s, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(s).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
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
    Ok(())
}
