//! Our FDP model against QEMU 10.0.2's FDP emulation, as `scripts/fdp-probe` captured it
//! through nvme-cli 2.3 (docs/fdp/qemu-10.0.2.txt; what each page held: docs/fdp/README.md).
//!
//! The model is built in the capture's configuration: 2 reclaim groups, 8 reclaim-unit handles,
//! all initially isolated, reclaim units of 16 MiB (4096 blocks of 4 KiB). QEMU splits the
//! handles between two namespaces (namespace 1: placement handles 0-5 → RUHs 0-5; namespace 2:
//! PHs 0-1 → RUHs 6-7); the model has no namespaces, so it is the **one-namespace view**: one
//! namespace whose placement handle i is RUH i, all eight of them. A command of the capture is
//! replayed as that namespace would see it:
//!
//! - namespace 2's PH 1 (RUH 7) is our handle 7;
//! - a PH past its namespace's list (namespace 1's PH 6, namespace 2's PH 2) is a PH past ours,
//!   PH 8: invalid in both, which is what those commands test;
//! - a write with no directive, or with DTYPE 1 (streams, which QEMU ignores), names no
//!   placement.
//!
//! QEMU has no flash: no spare, no GC, no erase. The model gets a spare (50 %) so that it can
//! hold the capture's handles' open units and its GC reserve; nothing in the replay fills the
//! device, so GC never runs and media writes are the host's.
//!
//! Asserted equal to the capture: NRG, NRUH, RUNS, RUH types, RGIF (we use QEMU's rule, see
//! `rgif_follows_qemus_rule`), usage attributes after the writes, HBMW after every step, MBE,
//! the Reclaim Unit Not Fully Written events the handle updates log and their placement
//! identifiers, a write with an invalid placement identifier succeeding and landing on handle 0
//! of group 0, and Invalid Field in Command (0x4002) for a handle update naming one.
//!
//! Where we differ on purpose (QEMU's quirks, docs/fdp/README.md):
//!
//! - MBMW: QEMU adds a reclaim unit's remaining RUAMW again when a write fills or crosses the
//!   unit (+524288 and +262144 bytes here), and the whole unit (16 MiB) when a handle update
//!   leaves a unit nothing was written to. Ours counts what was programmed: MBMW = HBMW + GC's
//!   moves (none here).
//! - QEMU logs Reclaim Unit Not Fully Written when a write fills a unit exactly (PID 4) or
//!   crosses its end (PID 5): those units were fully written; we log nothing.
//! - QEMU logs no Invalid Placement Identifier event (type 03h) for a write with an invalid PID,
//!   even enabled; TP4146 has one, and we log it.
//! - PID 0x2001 with RGIF 2: QEMU masks the placement handle with bits 12:0 (one bit short) and
//!   lands on PH 1; the PH field is bits 13:0, so for us it is PH 0x2001, invalid → handle 0.
//! - The model does not keep per-type event enables (feature 1Eh): every host event is logged.
//! - Not modelled: identify data, features, RUH status (RUAMW, EARUTR), ERUTL, namespaces, the
//!   controller reset (the model's `restart` is a power cycle, which closes open units).

use zonekit_ssd::log::{EventKind, FdpEvent};
use zonekit_ssd::{BlockDevice, Pid, RuhType, Ssd, SsdConfig, SsdError};

const BLOCK: u64 = 4096;
const RU_BLOCKS: u64 = 4096;
/// QEMU's RGIF for 2 reclaim groups (FDPA 82h).
const RGIF: u8 = 2;

/// The capture's device in the one-namespace view (see the module doc): 1.25 GiB, its two
/// namespaces' space together.
fn qemu_shaped() -> Ssd {
    let mut cfg = SsdConfig::fdp((1280 << 20) / BLOCK, 0.5, RU_BLOCKS, 8, RuhType::InitiallyIsolated);
    cfg.reclaim_groups = 2;
    Ssd::new(cfg).unwrap()
}

/// A placement identifier as a command carries it (DSPEC), decoded by the device's RGIF.
fn pid(dspec: u16) -> Pid {
    Pid::decode(dspec, RGIF)
}

fn write(ssd: &mut Ssd, lba: u64, blocks: u64, dspec: Option<u16>) {
    let data = vec![0u8; (blocks * BLOCK) as usize];
    ssd.write(lba, dspec.map(pid), &data).unwrap_or_else(|e| panic!("write of {blocks} at {lba} with {dspec:?}: {e}"));
}

fn hbmw(ssd: &Ssd) -> u64 {
    ssd.stats_log().unwrap().hbmw
}

/// The PIDs (as the log page encodes them) of the Reclaim Unit Not Fully Written events.
fn not_fully_written(ssd: &Ssd) -> Vec<u16> {
    let events: Vec<FdpEvent> = ssd.events_log().unwrap().events;
    events.iter().filter(|e| e.kind == EventKind::RuNotFullyWritten).map(|e| e.pid.expect("a host handle's unit").encode(RGIF)).collect()
}

#[test]
fn the_configuration_log_matches_the_capture() {
    let ssd = qemu_shaped();
    let c = ssd.config_log().unwrap();
    // Capture, log page 20h: FDPA 82h (RGIF 2), NRG 2, NRUH 8, RUNS 16777216, RUHT 01h × 8.
    assert_eq!((c.rgif, c.nrg, c.nruh, c.runs), (RGIF, 2, 8, 16_777_216));
    assert!(c.ruh_types.iter().all(|t| t.code() == 0x01) && c.ruh_types.len() == 8);
    // Capture, 21h at power-on: every RUH some namespace's list names is Host Specified (01h).
    let usage = ssd.usage_log().unwrap();
    assert_eq!(usage.attributes.iter().map(|a| a.code()).collect::<Vec<_>>(), [1; 8]);
    let s = ssd.stats_log().unwrap();
    assert_eq!((s.hbmw, s.mbmw, s.mbe), (0, 0, 0));
    assert_eq!(ssd.events_log().unwrap().total, 0);
}

#[test]
fn rgif_follows_qemus_rule() {
    // QEMU: 0 for one group, else the bit length of NRG (one bit more than needed when NRG is a
    // power of two). We follow it: PIDs are then the same numbers on both (0x4003 is RG 1,
    // PH 3 on each), so a capture's command sequence replays as it is.
    for (groups, rgif) in [(1u16, 0u8), (2, 2), (3, 2), (4, 3), (5, 3), (8, 4)] {
        let mut cfg = SsdConfig::fdp(1 << 16, 0.9, 64, 2, RuhType::InitiallyIsolated);
        cfg.reclaim_groups = groups;
        assert_eq!(Ssd::new(cfg).unwrap().config_log().unwrap().rgif, rgif, "{groups} groups");
    }
    assert_eq!(pid(0x4003), Pid { group: 1, handle: 3 });
    assert_eq!(pid(0x8003), Pid { group: 2, handle: 3 });
    assert_eq!(pid(0x2001), Pid { group: 0, handle: 0x2001 });
}

#[test]
fn the_captures_command_sequence_replays_with_its_counters_and_events() {
    let mut ssd = qemu_shaped();
    // "write, valid placement identifier": ns 1 PID 1 (RG 0 PH 1), PID 0x4002 (RG 1 PH 2),
    // ns 2 PID 1 (RUH 7), then no directive (PH 0, RG 0); one block at LBA 0 each.
    for dspec in [Some(1), Some(0x4002), Some(7), None] {
        write(&mut ssd, 0, 1, dspec);
    }
    assert_eq!(hbmw(&ssd), 16384, "HBMW after 4 one-block writes (capture: 16384)");
    assert_eq!(ssd.stats_log().unwrap().mbmw, 16384);
    let by_handle = ssd.counters().host_blocks_by_handle.clone();
    assert_eq!(by_handle, [1, 1, 1, 0, 0, 0, 0, 1]);
    // Capture, 21h after the writes: 01h for every RUH (the write with no directive did not
    // make RUH 0 controller specified).
    assert_eq!(ssd.usage_log().unwrap().attributes.iter().map(|a| a.code()).collect::<Vec<_>>(), [1; 8]);

    // "write, invalid placement identifier": ns 1 PID 6 and ns 2 PID 2 (a PH past the
    // namespace's: our PH 8), PID 0x7fff (PH 0x3fff of RG 1), PID 0x8002 (RG 2 of 2), PID
    // 0x2001 (see the module doc), DTYPE 1 (no placement). Every one succeeds (QEMU: 00h) and
    // lands on handle 0 of group 0.
    for dspec in [Some(8), Some(0x7fff), Some(8), Some(0x8002), Some(0x2001), None] {
        write(&mut ssd, 0, 1, dspec);
    }
    assert_eq!(hbmw(&ssd), 40960, "HBMW after 10 one-block writes (capture: 40960)");
    assert_eq!(ssd.stats_log().unwrap().mbmw, 40960);
    assert_eq!(ssd.counters().host_blocks_by_handle[0], 1 + 6);
    assert_eq!(ssd.counters().invalid_placements, 5);
    // We log TP4146's Invalid Placement Identifier (03h) for each; QEMU logs none.
    let events = ssd.events_log().unwrap();
    let invalid: Vec<u16> = events.events.iter().filter(|e| e.kind == EventKind::InvalidPlacementIdentifier).map(|e| e.pid.unwrap().encode(RGIF)).collect();
    assert_eq!(invalid, [8, 0x7fff, 8, 0x8002, 0x2001]);

    // "reclaim unit handle update": PIDs 3 and 0x4003 succeed; 0x8003 (RG 2) is Invalid Field
    // in Command with DNR, 0x4002; ns 1's PID 6 is our PH 8, the same. "PIDs 2 then 6 in one
    // command": QEMU updates PID 2, then fails on 6: the same sequence here.
    ssd.update_handle(pid(3)).unwrap();
    ssd.update_handle(pid(0x4003)).unwrap();
    for dspec in [8u16, 0x8003] {
        let e = ssd.update_handle(pid(dspec)).unwrap_err();
        assert!(matches!(e, SsdError::InvalidPlacement { .. }), "{e}");
        assert_eq!(e.nvme_status(), Some(0x4002), "RUH update with PID {dspec:#x}");
    }
    ssd.update_handle(pid(2)).unwrap();
    assert_eq!(ssd.update_handle(pid(8)).unwrap_err().nvme_status(), Some(0x4002));
    // Capture, 23h host events: 00h for (RG 0, RUH 3), (RG 1, RUH 3), (RG 0, RUH 2), PIDs 3,
    // 0x4003, 2: none of the three units had been written to, and each was left.
    assert_eq!(not_fully_written(&ssd), [3, 0x4003, 2]);
    assert_eq!(hbmw(&ssd), 40960);
    // QEMU: MBMW 50372608 (+ 3 × 16 MiB for units nothing was written to). Ours: 40960.
    assert_eq!(ssd.stats_log().unwrap().mbmw, 40960);

    // "an RU filled": 4096 blocks with PID 4 from LBA 8192 (128 a command), then one more.
    for i in 0..32 {
        write(&mut ssd, 8192 + i * 128, 128, Some(4));
    }
    write(&mut ssd, 0, 1, Some(4));
    assert_eq!(hbmw(&ssd), 16_822_272, "capture: 16822272");
    // "an RU crossed": 4032 blocks with PID 5 from LBA 16384, then 128 (64 past the unit).
    for i in 0..31 {
        write(&mut ssd, 16384 + i * 128, 128, Some(5));
    }
    write(&mut ssd, 16384 + 3968, 64, Some(5));
    assert_eq!(hbmw(&ssd), 33_337_344, "capture: 33337344");
    write(&mut ssd, 16384 + 4032, 128, Some(5));
    assert_eq!(hbmw(&ssd), 33_861_632, "capture: 33861632");
    let s = ssd.stats_log().unwrap();
    // QEMU: MBMW 84979712 (the quirks above), MBE 0 (it never erases). Ours: nothing moved,
    // nothing erased.
    assert_eq!((s.mbmw, s.mbe), (s.hbmw, 0));
    // QEMU also logs 00h for PID 4 and PID 5 here (units fully written); we do not.
    assert_eq!(not_fully_written(&ssd), [3, 0x4003, 2]);
    assert_eq!(ssd.usage_log().unwrap().attributes.iter().map(|a| a.code()).collect::<Vec<_>>(), [1; 8]);
    ssd.check_invariants();
}
