from django.urls import path

from .api.collections import CollectionListView
from .api.health import HealthView
from .api.erase import EraseView, RecordView
from .api.reads import DocumentHistoryView, DocumentView, TimelineView
from .api.records_write import RecordBatchView
from .api.review import RecordApproveView, RecordRejectView
from .api.transfer import ExportView, ImportView

urlpatterns = [
    path("health", HealthView.as_view(), name="health"),
    path("records/<str:id>", RecordView.as_view(), name="record-detail"),
    path("timeline", TimelineView.as_view(), name="timeline"),
    path("document", DocumentView.as_view(), name="document"),
    path("document/history", DocumentHistoryView.as_view(), name="document-history"),
    path("collections", CollectionListView.as_view(), name="collections"),
    path("records", RecordBatchView.as_view(), name="records"),
    path("erase", EraseView.as_view(), name="erase"),
    path("records/<str:id>/approve", RecordApproveView.as_view(), name="record-approve"),
    path("records/<str:id>/reject", RecordRejectView.as_view(), name="record-reject"),
    path("export", ExportView.as_view(), name="export"),
    path("import", ImportView.as_view(), name="import"),
]
