//! Every trace reader, on arbitrary (possibly compressed) bytes: errors are fine, panics are not.
#![no_main]
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::format::{self, Format, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let formats = [Format::Alibaba, Format::Tencent, Format::Msr, Format::Umass, Format::Systor, Format::CloudPhysicsCsv, Format::Vscsi, Format::DiskSim];
    let fmt = &formats[selector as usize % formats.len()];
    let lenient = selector & 0x80 != 0;
    let path = Path::new("fuzz-input");
    let Ok(input) = format::decompress_reader(Box::new(std::io::Cursor::new(bytes.to_vec())), path) else { return };
    let records = format::from_reader(input, path, fmt, &ReadOptions { lenient, ..ReadOptions::default() });
    if let Ok(split) = Splitter::new(records, SplitOptions::default()) {
        for block in split.take(100_000) {
            if block.is_err() && !lenient {
                break;
            }
        }
    }
});
