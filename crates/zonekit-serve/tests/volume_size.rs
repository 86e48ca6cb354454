//! A new volume exports no more blocks than its FTL holds: every block it advertises takes a
//! write, however small the device (sized by utilisation alone, a 32-zone device's volume was
//! half again what the FTL holds beside its open zones and GC's reserve, and writes to its
//! last blocks failed).

mod common;

use zonekit_serve::volume::{Volume, VolumeSpec};

#[test]
fn every_block_of_a_new_volume_takes_a_write() {
    for (zones, utilization) in [(32, 0.8), (24, 0.95), (64, 0.5)] {
        let spec = VolumeSpec { utilization, ..VolumeSpec::default() };
        let mut vol = Volume::open(common::small_device(zones, Some(8)), &spec).unwrap();
        let blocks = vol.blocks();
        assert!(blocks > 0);
        for b in 0..blocks {
            let data = vec![(b % 251) as u8 + 1; 4096];
            vol.write(b, &data).unwrap_or_else(|e| panic!("{zones} zones at utilisation {utilization}: block {b} of {blocks}: {e}"));
        }
        vol.flush().unwrap();
        let mut buf = vec![0u8; 4096];
        for b in [0, blocks / 2, blocks - 1] {
            vol.read(b, &mut buf).unwrap();
            assert_eq!(buf, vec![(b % 251) as u8 + 1; 4096]);
        }
    }
}
