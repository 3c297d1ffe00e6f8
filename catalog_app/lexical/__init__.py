"""The lexical term index: exact BM25 candidates without scanning every record.

Invariant: for each maintained analyzer (``analyzers``), the index holds exactly the *visible*
records (live and current in their lane, ``catalog_app.record_sql``; the active and the draft
lanes alike), maintained in the transactions that change visibility (``maintenance``).

Tables (``models``; DDL in migrations 0009, 0014, 0018 and 0020), and why each has the shape it
has:

* ``group``: one row per (workspace, collection, collection_version, type, status, keyed) that
  has ever held a visible record. Documents, blocks and pending rows carry the 4-byte group id
  instead of the five denormalised scope columns, so a scope on any of those axes is a small set
  of group ids. Document statistics are kept per group: N and the total length of every scope
  without entities are a sum over its groups, exact without counting.
* ``document``: one row per visible record and analyzer (group, length, UUID), including records
  without a single term, which still count in N and the average length. It is the index's
  membership (what to remove when a record stops being visible) and what an entity scope
  counts. Records are named by ``seq`` (8 bytes, an integer numpy reads directly); UUIDs are
  looked up only for the final hits.
* ``block``, ``compaction``, ``change``, ``pending``: the postings (term, seq, tf, length), in
  compacted blocks (one per term and group) up to each (workspace, analyzer)'s watermark, and
  since then as the pending rows the writes stored, one per term a write touched, each posting
  with its group (``compaction`` has the invariant). A term's df and pruning bound are taken
  from its postings in scope, exactly.
* ``group_stats`` (docs, total length per group and analyzer): the maintained statistics.
* ``source_totals``: per (workspace, collection), every record row ever inserted, visible or not,
  and the sum of their ``record_sql.source_bytes``, for full-scan coverage figures.
* ``backfill``: the resumable progress of ``lexical_backfill``.

No foreign keys (a per-row RI check on each row would cost the write path more than the row); a
trigger on workspace deletion forgets the workspace's rows.

Reads are in ``query`` (``index_top_k``, ``records_with_all_terms``, ``source_totals``); exact
scoring and MaxScore pruning in ``bm25_topk``; ``check`` and ``backfill`` serve the commands.
"""
