from django.urls import path

from .api import ReceiptView, RetrieveView

urlpatterns = [
    path("retrieve", RetrieveView.as_view(), name="retrieve"),
    path("receipts/<str:id>", ReceiptView.as_view(), name="receipt-detail"),
]
