//! Line charts as small PNGs (800×400), drawn with plotters.
//!
//! Text uses the Hack font embedded in the binary (from the
//! `epaint_default_fonts` crate), registered with plotters' ab_glyph
//! renderer under "sans-serif" on first use: no system font is needed.
//! docs/design/006-bench-tool.md says why.

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::BenchError;

/// Width and height of every chart, in pixels.
pub const CHART_SIZE: (u32, u32) = (800, 400);
const FONT: &str = "sans-serif";
/// Series with at most this many points also get a dot per point.
const MARKERS_POINTS_MAX: usize = 60;

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart to draw.
#[derive(Clone, Debug)]
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: &'a [Series],
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font shipped by the crate; a failure
        // here would leave charts without text, which rendering reports.
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::HACK_REGULAR,
        );
    });
}

/// Draws `chart` into the PNG file `path`.
pub fn draw(path: &Path, chart: &Chart<'_>) -> Result<(), BenchError> {
    register_font();
    render(path, chart).map_err(|message| BenchError::Chart {
        path: path.to_path_buf(),
        message,
    })
}

/// The axes' upper bounds: the data's, with headroom (room for the last
/// point's marker, and for the legend above the lines), never zero.
fn bounds(series: &[Series]) -> (f64, f64) {
    let points = series.iter().flat_map(|s| s.points.iter());
    let (x, y) = points.fold((0.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
    (
        if x > 0.0 { x * 1.02 } else { 1.0 },
        if y > 0.0 { y * 1.25 } else { 1.0 },
    )
}

/// Decimals that axis labels up to `max` need.
fn decimals(max: f64) -> usize {
    match max {
        m if m >= 20.0 => 0,
        m if m >= 2.0 => 1,
        _ => 2,
    }
}

fn render(path: &Path, c: &Chart<'_>) -> Result<(), String> {
    let root = BitMapBackend::new(path, CHART_SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (x_max, y_max) = bounds(c.series);
    let mut chart = ChartBuilder::on(&root)
        .caption(c.title, (FONT, 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(|e| e.to_string())?;
    let (x_digits, y_digits) = (decimals(x_max), decimals(y_max));
    let x_fmt = move |v: &f64| format!("{v:.x_digits$}");
    let y_fmt = move |v: &f64| format!("{v:.y_digits$}");
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_desc(c.x_label)
        .y_desc(c.y_label)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT, 12))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, s) in c.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        // Markers keep short runs visible: a one-interval series has no line.
        if s.points.len() <= MARKERS_POINTS_MAX {
            let dots = s.points.iter().map(|&p| Circle::new(p, 3, color.filled()));
            chart.draw_series(dots).map_err(|e| e.to_string())?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_small_png() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.png");
        let series = vec![
            Series {
                name: "get".into(),
                points: (0..30).map(|i| (f64::from(i), f64::from(i * i))).collect(),
            },
            Series {
                name: "put".into(),
                points: vec![],
            },
        ];
        let chart = Chart {
            title: "throughput",
            x_label: "seconds",
            y_label: "ops/s",
            series: &series,
        };
        draw(&path, &chart).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() < 100_000, "{} bytes", bytes.len());
    }

    #[test]
    fn bounds_never_collapse() {
        assert_eq!(bounds(&[]), (1.0, 1.0));
        let s = Series {
            name: "x".into(),
            points: vec![(2.0, 10.0)],
        };
        assert_eq!(bounds(&[s]), (2.04, 12.5));
    }
}
