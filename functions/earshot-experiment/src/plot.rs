//! The time-to-first-audio distributions of the arms, as an SVG picture: one cumulative curve per arm
//! (the share of answers whose first audio came within x ms), with the p50 and p90 marked. A cumulative
//! curve shows the whole distribution without choosing bins, and a left-shifted curve is the faster
//! arm at every percentile. Written as SVG text by hand: a few dozen lines, where a plotting crate would
//! bring fonts and rasterisers for a picture a browser draws anyway.

use std::fmt::Write as _;

use crate::lines::Answer;
use crate::stats;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 60.0;
const LEGEND_Y: f64 = 44.0;
const BOTTOM: f64 = 56.0;
const LEGEND_WIDTH: f64 = 260.0;
const COLOURS: [&str; 4] = ["#1b6ac9", "#d4621c", "#2a9d50", "#8e44ad"];

/// The picture for `arms` (name and its answers), titled with the experiment.
pub fn ttfa_svg(title: &str, arms: &[(String, Vec<&Answer>)]) -> String {
    let series: Vec<(&str, Vec<f64>)> = arms
        .iter()
        .map(|(name, answers)| {
            let mut v: Vec<f64> = answers.iter().filter_map(|a| a.ttfa_ms).collect();
            v.sort_by(f64::total_cmp);
            (name.as_str(), v)
        })
        .collect();
    // The x axis ends a little past the largest p99, so one outlier does not squash every curve.
    let top = series.iter().filter_map(|(_, v)| stats::percentile(v, 99.0)).fold(0.0, f64::max);
    let x_max = nice_ceiling((top * 1.1).max(100.0));
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let x = |ms: f64| LEFT + (ms.min(x_max) / x_max) * plot_w;
    let y = |share: f64| TOP + (1.0 - share) * plot_h;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(svg, r#"<text x="{LEFT}" y="22" font-size="15">{}</text>"#, escape(title));
    // Axes, grid and ticks.
    for i in 0..=5 {
        let ms = x_max * f64::from(i) / 5.0;
        let _ = writeln!(svg, r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1:.1}" stroke="#e3e3e3"/>"##, x(ms), TOP + plot_h);
        let _ = writeln!(svg, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{ms:.0}</text>"#, x(ms), TOP + plot_h + 18.0);
        let share = f64::from(i) / 5.0;
        let _ = writeln!(svg, r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#e3e3e3"/>"##, y(share), LEFT + plot_w);
        let _ = writeln!(svg, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{:.0} %</text>"#, LEFT - 6.0, y(share) + 4.0, share * 100.0);
    }
    let _ = writeln!(svg, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">time to first audio (ms)</text>"#, LEFT + plot_w / 2.0, HEIGHT - 14.0);
    let _ = writeln!(svg, r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>"##);
    for (i, (name, values)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        if !values.is_empty() {
            let mut points = format!("{:.1},{:.1}", x(0.0), y(0.0));
            let n = values.len() as f64;
            for (k, v) in values.iter().enumerate() {
                let _ = write!(points, " {:.1},{:.1} {:.1},{:.1}", x(*v), y(k as f64 / n), x(*v), y((k + 1) as f64 / n));
            }
            let _ = writeln!(svg, r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>"#);
            for p in [50.0, 90.0] {
                if let Some(v) = stats::percentile(values, p) {
                    let _ = writeln!(
                        svg,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{colour}"><title>{name} p{p:.0}: {v:.0} ms</title></circle>"#,
                        x(v),
                        y(p / 100.0)
                    );
                }
            }
        }
        let p50 = stats::percentile(values, 50.0).map_or("-".into(), |v| format!("{v:.0} ms"));
        // The legend is a row between the title and the plot, where no curve can run under it.
        let legend_x = LEFT + LEGEND_WIDTH * i as f64;
        let _ = writeln!(svg, r#"<rect x="{legend_x:.1}" y="{:.1}" width="14" height="4" fill="{colour}"/>"#, LEGEND_Y - 4.0);
        let _ =
            writeln!(svg, r#"<text x="{:.1}" y="{:.1}">arm {} ({} answers, p50 {p50})</text>"#, legend_x + 20.0, LEGEND_Y + 1.0, escape(name), values.len());
    }
    svg.push_str("</svg>\n");
    svg
}

/// 1, 2 or 5 times a power of ten, at least `v`.
fn nice_ceiling(v: f64) -> f64 {
    let power = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|c| *c >= v).unwrap_or(10.0 * power)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(ms: f64) -> Answer {
        Answer::plain("a", ms)
    }

    #[test]
    fn each_arm_is_a_curve_with_its_median_marked_and_the_axis_fits_the_slowest() {
        let fast: Vec<Answer> = (0..10).map(|i| answer(200.0 + 10.0 * f64::from(i))).collect();
        let slow: Vec<Answer> = (0..10).map(|i| answer(600.0 + 10.0 * f64::from(i))).collect();
        let svg = ttfa_svg("voices <test>", &[("kokoro".into(), fast.iter().collect()), ("polly".into(), slow.iter().collect())]);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("kokoro p50: 245 ms") && svg.contains("polly p50: 645 ms"), "{svg}");
        assert!(svg.contains("voices &lt;test&gt;"));
        assert!(svg.contains(">1000</text>"), "the axis runs to 1000 ms past polly's p99 (689): {svg}");
        assert_eq!(nice_ceiling(758.0), 1000.0);
        assert_eq!(nice_ceiling(130.0), 200.0);
    }
}
