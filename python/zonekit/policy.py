"""Policies written in Python: subclass one of these (or write any class with the same
methods) and pass an instance where a policy name goes.

The engines call a policy once per block: keep the per-write methods small. Times are
logical: ``now`` counts the user block writes before this one.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, Union


class Placement:
    """A placement policy for ``zonekit.replay`` (the calls the block FTL's ``Placement``
    trait makes).

    ``classes``: how many classes (open zones) it writes to. ``user_classes``: how many of the
    first ones user writes go to, hot to cold (on FDP they are folded onto the handles);
    default all.
    """

    classes: int = 1

    @property
    def user_classes(self) -> int:
        return self.classes

    def user_write(self, block: int, now: int, last_write: Optional[int], word: int) -> Union[int, Tuple[int, int]]:
        """The class of a user write of ``block`` (dense id, 0, 1, ... by first write).
        ``last_write``: the block's previous user write (None for a first write); ``word``:
        32 bits the engine keeps for the block (0 at first). Return the class, or
        ``(class, new_word)``."""
        raise NotImplementedError

    def gc_write(self, block: int, now: int, last_write: Optional[int], from_class: int, word: int) -> Union[int, Tuple[int, int]]:
        """The class of a GC write (a still-valid block moved out of a zone of
        ``from_class``)."""
        raise NotImplementedError

    def on_zone_full(self, cls: int) -> None:
        """A zone of class ``cls`` filled up."""

    def on_reclaim(self, cls: int, opened_at: int, full_at: int, now: int, garbage_proportion: float) -> None:
        """GC reclaimed a zone of class ``cls``, opened and filled at those logical times."""


class Victim:
    """A GC victim rule: ``select`` gets the candidates (full zones with garbage) as a dict of
    equal-length lists — zone, class_, written, valid, garbage_proportion, opened_at, full_at,
    last_invalidate, resets — and returns one of ``zones['zone']``, or None."""

    def select(self, zones: Dict[str, List], now: int, free_zones: int) -> Optional[int]:
        raise NotImplementedError


class Eviction:
    """An item-cache eviction policy for ``zonekit.cache_sim``: the cache keeps which blocks it
    holds; the policy hears hits and admissions and names a block it holds to evict when a
    miss needs room."""

    def on_hit(self, block: int) -> None:
        pass

    def on_admit(self, block: int) -> None:
        pass

    def evict(self) -> int:
        raise NotImplementedError
