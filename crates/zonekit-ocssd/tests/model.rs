//! Every FTL against an in-memory model: random writes (whole blocks, runs of pages, sub-page
//! writes that need read-modify-write), overwrites and reads on a small device in data mode,
//! enough traffic that GC and merges run many times. Invariants are checked as it goes.
//! A failure names the FTL, the seed and the step; `ZONEKIT_SEED=N` reruns one seed.

use zonekit_base::Rng;
use zonekit_ocssd::{Ftl, FtlConfig, OcGeometry, Ssd, FTLS};

const SMALL: OcGeometry = OcGeometry { channels: 2, luns_per_channel: 2, blocks_per_lun: 8, pages_per_block: 8, page_bytes: 8192 };

fn configs() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut out: Vec<_> = FTLS.iter().map(|f| (f.name, vec![])).collect();
    out.push(("sbm-gcl", vec![("no_free", "erase-in-place")]));
    out.push(("sbm-gcl", vec![("pn", "2"), ("bn", "2")]));
    out.push(("hsbm-gcl", vec![("pn", "2"), ("logs", "2")]));
    out.push(("hsbm-gcl", vec![("logs", "2"), ("merge", "bast")]));
    out.push(("dftl", vec![("cache_entries", "16")]));
    out.push(("fast", vec![("log_blocks", "3")]));
    out
}

fn seeds() -> Vec<u64> {
    match std::env::var("ZONEKIT_SEED") {
        Ok(s) => vec![s.parse().expect("ZONEKIT_SEED is a number")],
        Err(_) => vec![1, 2, 3],
    }
}

fn run(name: &str, params: &[(&str, &str)], seed: u64) -> Result<(), String> {
    let config = FtlConfig { params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), ..FtlConfig::default() };
    let mut ssd = Ssd::memory(name, &config, SMALL, true).map_err(|e| e.to_string())?;
    let page = SMALL.page_bytes as u64;
    let sector = 4096u64;
    // Use most of the logical space so GC has to work for its free pages.
    let space = ssd.logical_bytes() / sector * sector * 9 / 10 / sector * sector;
    let mut model = vec![0u8; space as usize];
    let mut rng = Rng::new(seed);
    let steps = 1500;
    for step in 0..steps {
        let at = |e: String| format!("{name} {params:?} seed {seed} step {step}: {e}");
        let roll = rng.below(100);
        if roll < 70 {
            let len = match rng.below(4) {
                0 => sector,
                1 => page * (1 + rng.below(3)),
                2 => SMALL.block_bytes(),
                _ => sector * (1 + rng.below(12)),
            }
            .min(space);
            // Sequential streams as well as random places: HPC traces sweep.
            let offset = if rng.chance(0.3) { (step as u64 * len) % (space - len + 1) / sector * sector } else { rng.below((space - len) / sector + 1) * sector };
            let byte = rng.below(255) as u8 + 1;
            let data: Vec<u8> = (0..len).map(|i| byte.wrapping_add((i / 512) as u8)).collect();
            ssd.write(offset, &data).map_err(|e| at(e.to_string()))?;
            model[offset as usize..(offset + len) as usize].copy_from_slice(&data);
        } else {
            let len = sector * (1 + rng.below(8)).min(space / sector);
            let offset = rng.below((space - len) / sector + 1) * sector;
            let mut buf = vec![0u8; len as usize];
            ssd.read(offset, &mut buf).map_err(|e| at(e.to_string()))?;
            if buf != model[offset as usize..(offset + len) as usize] {
                let first = buf.iter().zip(&model[offset as usize..]).position(|(a, b)| a != b).unwrap();
                return Err(at(format!("read of {len} bytes at {offset} differs from the model at byte {}", offset + first as u64)));
            }
        }
        if step % 50 == 0 || step == steps - 1 {
            ssd.check_invariants().map_err(|e| at(e.to_string()))?;
        }
    }
    // Everything reads back at the end.
    let mut all = vec![0u8; space as usize];
    ssd.read(0, &mut all).map_err(|e| e.to_string())?;
    if all != model {
        return Err(format!("{name} {params:?} seed {seed}: final read-back differs"));
    }
    let report = ssd.report();
    if report.flash.blocks_erased == 0 {
        return Err(format!("{name} {params:?} seed {seed}: nothing was ever erased; the test did not reach GC"));
    }
    Ok(())
}

#[test]
fn every_ftl_matches_the_model() {
    let mut failures = Vec::new();
    for (name, params) in configs() {
        for seed in seeds() {
            if let Err(e) = run(name, &params, seed) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn requests_beyond_the_logical_space_are_refused() {
    for info in FTLS {
        let mut ssd = Ssd::memory(info.name, &FtlConfig::default(), SMALL, false).unwrap();
        let end = ssd.logical_bytes();
        let err = ssd.write(end - 4096, &[0; 8192]).unwrap_err().to_string();
        assert!(err.contains("beyond the") && err.contains(info.name), "{}: {err}", info.name);
        assert_eq!(ssd.ftl().name(), info.name);
    }
}
