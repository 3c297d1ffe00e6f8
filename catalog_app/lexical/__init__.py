"""The lexical term index: exact BM25 candidates without scanning every record.

Invariant: for each maintained analyzer (``analyzers``), the index holds exactly the *visible*
records (live and current in their lane, ``catalog_app.record_sql``; the active and the draft
lanes alike), maintained in the transactions that change visibility (``maintenance``).

Tables (``models``; DDL in migration 0009), and why each has the shape it has:

* ``group``: one row per (workspace, collection, collection_version, type, status, keyed) that
  has ever held a visible record. Postings and documents carry the 4-byte group id instead of
  the five denormalised scope columns, so a posting stays narrow and a scope on any of those
  axes is a small set of group ids. Document statistics are kept per group: N and the total
  length of every scope without entities are a sum over its groups, exact without counting.
* ``posting``: one row per (workspace, analyzer, term, record seq) with the record's group, tf
  and length. The key carries the rest as ``INCLUDE`` columns, so a term's postings in scope are
  one index-only range scan, in ``seq`` order. Records are named by ``seq`` (8 bytes, an integer
  numpy reads directly); UUIDs are looked up only for the final hits.
* ``document``: one row per visible record and analyzer (group, length, UUID), including records
  without a single term, which still count in N and the average length. It is the index's
  membership (what to remove when a record stops being visible) and what an entity scope
  counts.
* ``group_stats`` (docs, total length per group and analyzer) and ``term_stats`` (df, max tf,
  min length per workspace, analyzer, term, collection and status: one upsert per distinct term
  of a write, not one per group): the maintained statistics. df is exact; max tf and min length
  only grow looser on removal and stay valid bounds in every scope inside that collection and
  status. A query reads every query term's postings in scope anyway (``matched`` is exact), so it
  takes each df and its pruning bound from them, and holds them against the statistics where
  those cover the scope exactly (a disagreement fails the read).
* ``source_totals``: per (workspace, collection), every record row ever inserted, visible or not,
  and the sum of their ``record_sql.source_bytes``, for full-scan coverage figures.
* ``backfill``: the resumable progress of ``lexical_backfill``.

No foreign keys (a per-row RI check on each posting would cost more than the posting); a trigger
on workspace deletion forgets the workspace's rows.

Reads are in ``query`` (``index_top_k``, ``records_with_all_terms``, ``source_totals``); exact
scoring and MaxScore pruning in ``scoring``; ``check`` and ``backfill`` serve the commands.
"""
