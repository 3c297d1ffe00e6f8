from django.urls import path

from .api import EvaluateView, FeedbackView, ReceiptView, RetrieveView
from .context_api import ContextView
from .memory.api import (MemoryAroundView, MemoryGrepView, MemoryHistoryView, MemoryLatestView, MemoryLsView,
                         MemoryReadView)
from .mcp.api import ToolListView
from .mcp.http import McpView
from .lexical.api import LexicalSearchView
from .memory.brief_api import MemorySearchView

urlpatterns = [
    path("retrieve", RetrieveView.as_view(), name="retrieve"),
    path("receipts/<str:id>", ReceiptView.as_view(), name="receipt-detail"),
    path("receipts/<str:id>/feedback", FeedbackView.as_view(), name="receipt-feedback"),
    path("evaluate", EvaluateView.as_view(), name="evaluate"),
    path("context", ContextView.as_view(), name="context"),
    path("memory/grep", MemoryGrepView.as_view(), name="memory-grep"),
    path("memory/latest", MemoryLatestView.as_view(), name="memory-latest"),
    path("memory/around", MemoryAroundView.as_view(), name="memory-around"),
    path("memory/read", MemoryReadView.as_view(), name="memory-read"),
    path("memory/ls", MemoryLsView.as_view(), name="memory-ls"),
    path("memory/history", MemoryHistoryView.as_view(), name="memory-history"),
    path("tools", ToolListView.as_view(), name="tools"),
    path("mcp", McpView.as_view(), name="mcp"),
    path("search/lexical", LexicalSearchView.as_view(), name="search-lexical"),
    path("memory/search", MemorySearchView.as_view(), name="memory-search"),
]
