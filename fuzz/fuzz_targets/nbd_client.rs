//! Whatever an NBD client sends (handshake, options, requests, payloads), the server answers
//! or closes that connection: it never panics.
#![no_main]

use std::io::{self, Cursor, Read, Write};

use libfuzzer_sys::fuzz_target;
use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};
use zonekit_serve::nbd::{serve_client, Export};
use zonekit_serve::volume::{Volume, VolumeSpec};

/// The client's bytes in, the server's replies dropped.
struct Client<'a>(Cursor<&'a [u8]>);

impl Read for Client<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Client<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let g = Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 16,
        zone_capacity_blocks: 16,
        zone_count: 16,
        conventional_zone_count: 0,
        open_zones_max: None,
        active_zones_max: None,
    };
    let dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    let export = Export::new("zonekit", Volume::open(dev, &VolumeSpec { placement: "nosep".into(), ..VolumeSpec::default() }).unwrap());
    let _ = serve_client(&mut Client(Cursor::new(data)), &export);
});
