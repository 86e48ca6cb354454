"""LRU eviction written in Python: the same hits as Zonekit's Rust `lru`."""
from collections import OrderedDict

import zonekit


class LRU(zonekit.Eviction):
    def __init__(self):
        self.order = OrderedDict()  # least recently used first

    def on_hit(self, block):
        self.order.move_to_end(block)

    def on_admit(self, block):
        self.order[block] = None

    def evict(self):
        return self.order.popitem(last=False)[0]


if __name__ == "__main__":  # python lru.py: this LRU and the Rust one on the same reads
    df = zonekit.cache_sim(["lru", LRU()], 2000, workload="zipf:blocks=50K,alpha=0.9,writes=300K")
    print(df[["policy", "requests", "hits", "hit_ratio"]].to_string(index=False))
    same = df.hits.iloc[0] == df.hits.iloc[1]
    print("the same hits as Rust's LRU" if same else "DIFFERENT hits from Rust's LRU")
    raise SystemExit(0 if same else 1)
