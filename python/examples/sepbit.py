"""SepBIT (FAST'22) in Python: the decisions of Zonekit's Rust `sepbit`, so the same WAF."""
import zonekit

MASK = (1 << 29) - 1  # a block's word: the zone number of its class when written, and the class


class SepBIT(zonekit.Placement):
    classes, user_classes = 7, 2

    def __init__(self):
        self.ell, self.batch = float("inf"), []  # mean lifespan of reclaimed class-1 zones, per 16
        self.fifo_len = 0  # the simulator's FIFO of recent user writes, by its length
        self.distinct = 0
        self.filled = [0] * 7  # zones of each class that have filled
        self.open_invalid, self.open_invalid_total = [0] * 7, 0  # invalidated in open zones
        self.created, self.next_created = {}, 0  # class-1 zones' creation, by opening time
        self.last_user_write = 0

    def tag(self, cls):
        return cls, (self.filled[cls] & MASK) << 3 | cls

    def user_write(self, block, now, last, word):
        rewrite = last is not None
        old = word & 7
        if rewrite and word >> 3 == self.filled[old] & MASK:
            self.open_invalid[old] += 1
            self.open_invalid_total += 1
        lifetime = now - (last or 0)
        cls = 0 if rewrite and lifetime < self.ell and lifetime < self.fifo_len else 1
        valid = self.distinct - rewrite + self.open_invalid_total
        self.fifo_len += 1
        if self.fifo_len > valid or self.fifo_len > self.ell:
            self.fifo_len -= 1
            if self.fifo_len > self.ell:
                self.fifo_len -= 1
        self.distinct += not rewrite
        if cls == 0 and self.next_created is not None:
            self.created[now], self.next_created = self.next_created, None
        self.last_user_write = now
        return self.tag(cls)

    def gc_write(self, block, now, last, from_class, word):
        if from_class == 0:
            return self.tag(2)
        age = now - (last or 0) - 1
        return self.tag(3 + sum(age >= k * self.ell for k in (4, 8, 16)))

    def on_zone_full(self, cls):
        self.filled[cls] += 1
        self.open_invalid_total -= self.open_invalid[cls]
        self.open_invalid[cls] = 0
        if cls == 0:
            self.next_created = self.last_user_write + 1

    def on_reclaim(self, cls, opened_at, full_at, now, garbage_proportion):
        if cls == 0:
            self.batch.append(now - self.created.pop(opened_at, opened_at))
            if len(self.batch) == 16:
                self.ell, self.batch = sum(self.batch) / 16, []


if __name__ == "__main__":  # python sepbit.py: this SepBIT and the Rust one on the same workload
    settings = dict(workload="zipf:blocks=100K,alpha=0.9,writes=600K", victim="greedy", zone_mib=2)
    rust = zonekit.replay(placement="sepbit", **settings)
    py = zonekit.replay(placement=SepBIT(), **settings)
    for r in (rust, py):
        print(f"{r.placement:14} WAF {r.waf:.4f}  GC blocks {r.gc_blocks}  GC count {r.gc_count}")
    same = (py.waf, py.gc_blocks, py.gc_count) == (rust.waf, rust.gc_blocks, rust.gc_count)
    print("the same as Rust's SepBIT" if same else "DIFFERENT from Rust's SepBIT")
    raise SystemExit(0 if same else 1)
