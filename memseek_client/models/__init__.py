"""Typed results (and the one typed request, ``RecordInput``): frozen dataclasses mirroring the
OpenAPI document's component schemas member for member (tests/memseek_client/test_models.py
compares them). JSON objects the API leaves open (view hits, rank grammar, compilation traces)
stay plain JSON values."""
from .lexical import LexicalHit, LexicalPage, LexicalResponse, LexicalTiming
from .memory import (Brief, MemoryAround, MemoryFact, MemoryFactSource, MemoryGrep, MemoryHistory, MemoryHit,
                     MemoryKnown, MemoryLatest, MemoryLs, MemoryLsEntry, MemoryRead, MemoryVersion, MemoryWorkedOut)
from .reads import (CollectionContract, CollectionField, CollectionList, Document, DocumentBelief, DocumentHistory,
                    DocumentRetraction, DocumentVersion, Health, HealthProblem, ReplicaHealth, TimelinePage,
                    TimelineRow)
from .records import ErasureResult, IngestOutcome, IngestResult, Record, RecordInput, ReviewRecord, ReviewResult
from .retrieval import (ContextComponents, ContextResponse, ContextSection, Evaluation, Feedback, MemoryContext,
                        MemoryContextSections, Receipt, RetrievedEntry)
from .search import RankSchema, SearchHit, SearchResponse, ViewList, ViewQueryResult
from .transfer import ImportResult
from .tools import Tool, ToolAnnotations, ToolCatalog, ToolInterface, ToolList, ToolRoute

__all__ = [
    "Brief", "CollectionContract", "CollectionField", "CollectionList", "ContextComponents", "ContextResponse",
    "ContextSection", "Document", "DocumentBelief", "DocumentHistory", "DocumentRetraction", "DocumentVersion",
    "ErasureResult", "Evaluation", "Feedback", "Health", "HealthProblem", "ImportResult", "IngestOutcome",
    "IngestResult", "LexicalHit", "LexicalPage", "LexicalResponse", "LexicalTiming", "MemoryAround", "MemoryContext",
    "MemoryContextSections", "MemoryFact", "MemoryFactSource", "MemoryGrep", "MemoryHistory", "MemoryHit",
    "MemoryKnown", "MemoryLatest", "MemoryLs", "MemoryLsEntry", "MemoryRead", "MemoryVersion", "MemoryWorkedOut",
    "RankSchema", "Receipt", "Record", "RecordInput", "ReplicaHealth", "RetrievedEntry", "ReviewRecord",
    "ReviewResult", "SearchHit", "SearchResponse", "TimelinePage", "TimelineRow", "Tool", "ToolAnnotations",
    "ToolCatalog", "ToolInterface", "ToolList", "ToolRoute", "ViewList", "ViewQueryResult",
]
