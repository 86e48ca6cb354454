//! Arbitrary column mappings and lines for the delimited reader.
#![no_main]
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use zonekit_trace::format::{self, Delimited, Format, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (mapping, lines) = text.split_once('\n').unwrap_or((&text, ""));
    if let Ok(d) = Delimited::parse(mapping, Some(','), false) {
        let input = Box::new(std::io::Cursor::new(lines.as_bytes().to_vec()));
        let _ = format::from_reader(input, Path::new("fuzz"), &Format::Delimited(d), &ReadOptions { lenient: true, ..ReadOptions::default() }).take(10_000).count();
    }
});
