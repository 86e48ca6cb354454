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
