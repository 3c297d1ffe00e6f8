from django.urls import path

from .api import EvaluateView, FeedbackView, ReceiptView, RetrieveView
from .context_api import ContextView
from .memory.brief_api import MemorySearchView

urlpatterns = [
    path("retrieve", RetrieveView.as_view(), name="retrieve"),
    path("receipts/<str:id>", ReceiptView.as_view(), name="receipt-detail"),
    path("receipts/<str:id>/feedback", FeedbackView.as_view(), name="receipt-feedback"),
    path("evaluate", EvaluateView.as_view(), name="evaluate"),
    path("context", ContextView.as_view(), name="context"),
    path("memory/search", MemorySearchView.as_view(), name="memory-search"),
]
