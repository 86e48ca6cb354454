//! Every reader on random bytes and on mutated traces of every format (written by
//! `zonekit_trace::fixture`, plain and compressed): errors are fine, panics are not.
//! (The cargo-fuzz targets in fuzz/ search deeper; this runs on stable in every test run.)

use std::path::Path;

use proptest::prelude::*;
use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::fixture;
use zonekit_trace::format::{self, Format, ReadOptions};

fn formats() -> Vec<Format> {
    vec![Format::Alibaba, Format::Tencent, Format::Msr, Format::Umass, Format::Systor, Format::CloudPhysicsCsv, Format::Vscsi, Format::DiskSim]
}

fn read_everything(bytes: &[u8], lenient: bool) {
    for fmt in formats() {
        let path = Path::new("input");
        let Ok(input) = format::decompress_reader(Box::new(std::io::Cursor::new(bytes.to_vec())), path) else { continue };
        let recs = format::from_reader(input, path, &fmt, &ReadOptions { lenient, ..ReadOptions::default() });
        for b in Splitter::new(recs, SplitOptions::default()).unwrap().take(20_000) {
            if b.is_err() && !lenient {
                break;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), lenient in any::<bool>()) {
        read_everything(&bytes, lenient);
    }

    #[test]
    fn random_text_lines_never_panic(lines in proptest::collection::vec("[0-9A-Za-z,. \\-]{0,60}", 0..20)) {
        read_everything(lines.join("\n").as_bytes(), true);
    }

    #[test]
    fn mutated_traces_never_panic(format in 0usize..8, compression in 0usize..4, flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..20), cut in any::<usize>()) {
        let format = &formats()[format];
        let mut bytes = fixture::compress(&fixture::render(format, &fixture::records(format, 300, 1)), fixture::Compression::ALL[compression]);
        bytes.truncate((cut % bytes.len()).clamp(1, 20_000));
        for (at, value) in flips {
            let n = bytes.len();
            bytes[at % n] = value;
        }
        read_everything(&bytes, true);
    }
}
