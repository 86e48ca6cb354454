//! Writes sample charts into the directory given (for looking at them, not a test).
use zonekit_report::{bar_chart, BarChart, LineChart, Series, Width};

fn main() {
    let out = std::path::PathBuf::from(std::env::args().nth(1).expect("an output directory"));
    let placements: Vec<String> = ["none", "sepbit", "mida", "dac", "warcip", "fadac", "lifetime"].map(String::from).to_vec();
    for (name, width) in [("page", Width::Page), ("column", Width::Column)] {
        let mut chart = BarChart::new("Total WAF (host × device) by placement and interface, mean over inputs", "WAF", "", "placement", placements.clone()).width(width);
        for (k, i) in ["zns", "fdp:8", "conventional"].iter().enumerate() {
            chart = chart.series(i, (0..7).map(|p| 1.0 + 0.13 * ((p * 3 + k * 5) % 11) as f64).collect());
        }
        std::fs::write(out.join(format!("grouped-{name}.svg")), chart.svg()).unwrap();
        let series = (0..3).map(|k| Series { name: format!("policy {k}"), points: (1..60).map(|i| (i as f64 * 100.0, (i * (k + 1)) as f64 / 60.0)).collect() });
        let mut line = LineChart::new("Latency CDF", "latency", "µs", "share of requests", "").x_log().width(width);
        for s in series {
            line = line.series(s);
        }
        std::fs::write(out.join(format!("line-{name}.svg")), line.svg()).unwrap();
    }
    let stacked = BarChart::new("Bytes written", "written", "GiB", "node", vec!["1".into(), "3".into(), "5".into()])
        .series("user", vec![10.0, 12.0, 9.0])
        .series("gc", vec![3.0, 8.0, 1.0])
        .stacked();
    std::fs::write(out.join("stacked.svg"), stacked.svg()).unwrap();
    std::fs::write(out.join("blocks.svg"), bar_chart("Blocks", "blocks", &[("a".into(), 63002.0), ("b".into(), 31000.0)])).unwrap();
}
