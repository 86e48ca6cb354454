import pytest
import zonekit


def test_a_memory_device_keeps_zns_rules_and_counters():
    d = zonekit.Device.memory("tiny")
    g = d.geometry
    block = g["block_size_bytes"]
    zones = d.zone_report()
    assert len(zones) == g["zone_count"] and set(zones.state) == {"empty"}
    assert d.append(0, b"a" * block) == 0
    assert d.append(0, b"b" * block) == 1
    d.write(2, b"c" * block)
    assert d.read(0, 3 * block) == b"a" * block + b"b" * block + b"c" * block
    with pytest.raises(ValueError, match="not the write pointer"):
        d.write(10, b"x" * block)
    report = d.zone_report()
    assert report.loc[0, "write_pointer"] == 3 and report.loc[0, "state"] == "implicitly-opened"
    d.finish_zone(0)
    assert d.zone_report().loc[0, "state"] == "full"
    d.reset_zone(0)
    assert d.zone_report().loc[0, "state"] == "empty"
    s = d.stats()
    assert (s["appends"], s["writes"], s["resets"]) == (2, 1, 1)
    assert s["resets_per_zone"][0] == 1


def test_the_open_zone_limit_is_enforced():
    d = zonekit.Device.memory("tiny")
    limit = d.geometry["open_zones_max"]
    for z in range(limit):
        d.open_zone(z)
    with pytest.raises(ValueError, match="open"):
        d.open_zone(limit)


def test_an_image_keeps_its_data_across_opens(tmp_path):
    path = tmp_path / "dev.img"
    d = zonekit.Device.create(path, "tiny")
    block = d.geometry["block_size_bytes"]
    d.append(3, b"z" * block)
    d.flush()
    del d
    again = zonekit.Device.open(path)
    start = again.zone_report().loc[3, "start"]
    assert again.read(start, block) == b"z" * block
    with pytest.raises(ValueError, match="already exists"):
        zonekit.Device.create(path, "tiny")
    with pytest.raises(ValueError, match="unknown device preset"):
        zonekit.Device.memory("nope")
