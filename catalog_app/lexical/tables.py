"""The lexical index's table names (from the models) and the SQL that joins a record ``r`` to
its group ``g``."""
from .models import (
    LexicalBackfill, LexicalBlock, LexicalChange, LexicalCompaction, LexicalDocument, LexicalGroup,
    LexicalGroupStats, LexicalPending, LexicalSourceTotals,
)

GROUP = LexicalGroup._meta.db_table
GROUP_STATS = LexicalGroupStats._meta.db_table
DOCUMENT = LexicalDocument._meta.db_table
PENDING = LexicalPending._meta.db_table
SOURCE_TOTALS = LexicalSourceTotals._meta.db_table
BACKFILL = LexicalBackfill._meta.db_table
BLOCK = LexicalBlock._meta.db_table
COMPACTION = LexicalCompaction._meta.db_table
CHANGE = LexicalChange._meta.db_table

GROUP_COLUMNS = ("workspace_id", "collection", "collection_version", "type", "status", "keyed")


def group_of(record: str = "r", group: str = "g") -> str:
    """SQL: group ``group`` is the one of record ``record``."""
    return " AND ".join([*(f"{group}.{column} = {record}.{column}" for column in GROUP_COLUMNS[:-1]),
                         f"{group}.keyed = ({record}.key IS NOT NULL)"])


def group_values(record: str = "r") -> str:
    """SQL: the group columns of record ``record``, in ``GROUP_COLUMNS`` order."""
    return ", ".join([*(f"{record}.{column}" for column in GROUP_COLUMNS[:-1]), f"{record}.key IS NOT NULL"])
