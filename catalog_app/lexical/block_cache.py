"""A process's cache of compacted block data, addressed by content.

A query names the blocks it reads by their ``digest`` (``sha256(data)``, which PostgreSQL
computes whenever a block is written, migration 0017) and sends the digests this process already
holds for its terms' (term, group) pairs, so the statement returns data only for the other blocks. A digest names one
content exactly, so a cached block is never stale: a compaction that rewrites a block gives it a
new digest, and the old entry is merely unused. Each read drops the entries of its terms that
are no longer among their blocks, and the least recently used entries go once the cache holds
more than ``LEXICAL_BLOCK_CACHE_BYTES`` (0 turns it off). Thread-safe; one per process.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from memseek_site.conf import memseek_setting

TermKey = tuple[int, int, str, int]  # (workspace_id, analyzer code, term, group id)


class BlockCache:
    def __init__(self):
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[TermKey, bytes], bytes] = OrderedDict()  # least recently used first
        self._by_term: dict[TermKey, set[bytes]] = {}
        self.size = 0  # bytes of data held

    def held(self, keys: list[TermKey]) -> dict[bytes, bytes]:
        """The data this process holds for the blocks of terms ``keys``, by digest (a copy: later
        evictions do not change it)."""
        found = {}
        with self._lock:
            for key in keys:
                for digest in self._by_term.get(key, ()):
                    self._entries.move_to_end((key, digest))
                    found[digest] = self._entries[key, digest]
        return found

    def keep(self, key: TermKey, current: list[bytes], fresh: dict[bytes, bytes]) -> None:
        """Term ``key``'s blocks are now those of digests ``current``: remember the data of
        ``fresh`` (digest: data) and forget the term's other entries."""
        limit = memseek_setting("LEXICAL_BLOCK_CACHE_BYTES")
        with self._lock:
            for digest in self._by_term.get(key, set()) - set(current):
                self._drop(key, digest)
            for digest, data in fresh.items():
                if limit <= 0 or len(data) > limit or (key, digest) in self._entries:
                    continue
                self._entries[key, digest] = data
                self._by_term.setdefault(key, set()).add(digest)
                self.size += len(data)
            while self.size > max(limit, 0):
                (oldest_key, oldest_digest), _ = next(iter(self._entries.items()))
                self._drop(oldest_key, oldest_digest)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_term.clear()
            self.size = 0

    def _drop(self, key: TermKey, digest: bytes) -> None:
        self.size -= len(self._entries.pop((key, digest)))
        digests = self._by_term[key]
        digests.discard(digest)
        if not digests:
            del self._by_term[key]


BLOCKS = BlockCache()
