"""Django settings for Memseek.

Every environment variable read here is documented in docs/configuration.md.
"""
import os
from pathlib import Path

from kombu import Queue

from .database import database_settings, replica_database_settings
from .queues import DEFAULT_QUEUE, QUEUES, TASK_ROUTES, TaskTimeLimits

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "memseek-development-only-secret-key-change-me")
DEBUG = os.environ.get("DJANGO_DEBUG", "false").lower() in ("1", "true", "yes")
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "catalog_app",
    "search_app",
    "retrieval_app",
]

MIDDLEWARE = [
    # Outermost: its latency is the whole of Django's work on the request, refusals included.
    "memseek_site.metrics_http.RequestMetricsMiddleware",
    "memseek_site.api_envelope.NoStoreMiddleware",
    "memseek_site.api_envelope.UriLengthMiddleware",
    "memseek_site.deadline.DeadlineMiddleware",
    "memseek_site.console_policy.ContentSecurityPolicyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memseek_site.query_text.QueryTextMiddleware",
    # Last: a read retried on the primary after its replica failed re-runs only the view.
    "memseek_site.consistency.ReadRoutingMiddleware",
]

ROOT_URLCONF = "memseek_site.urls"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "memseek_site.wsgi.application"

DATABASES = {"default": database_settings(BASE_DIR), **replica_database_settings()}
# Where each request's reads go (replicas with read-your-writes; docs/replicas.md).
DATABASE_ROUTERS = ["memseek_site.replicas.ReplicaRouter"]

# The shared cache (a workspace's last write position, for read-your-writes across processes and
# hosts): Redis at CACHE_URL (redis://host:port/db) when set, else this process's memory.
CACHES = {"default": ({"BACKEND": "django.core.cache.backends.redis.RedisCache",
                       "LOCATION": os.environ["CACHE_URL"]} if os.environ.get("CACHE_URL")
                      else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"})}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Static files (admin, the offline Swagger UI) are served by WhiteNoise straight from the
# installed apps, so the API process needs no collectstatic step and no separate web server.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["catalog_app.auth.WorkspaceKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["catalog_app.auth.HasWorkspace"],
    # Rate limits per key and per workspace, counted in the shared cache (docs/rate-limits.md).
    "DEFAULT_THROTTLE_CLASSES": ["catalog_app.throttle.RateLimitThrottle"],
    # Every body goes through the one strict decoding (size, depth, duplicate keys, text, ranges).
    "DEFAULT_PARSER_CLASSES": ["memseek_site.json_body.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "memseek_site.error_handler.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "catalog_app.api.schema.KeyedAutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Memseek API",
    "DESCRIPTION": "Memory service for AI agents: versioned collections of records, typed search, "
                   "views and token-budgeted context.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The OpenAPI description and its Swagger UI are public; the API routes they describe are not.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # 3.1: schemas are JSON Schema 2020-12, so a parser's own JSON Schema (the SearchSpec's) is
    # the document's, conditionals and tuples included.
    "OAS_VERSION": "3.1.0",
    # Choice sets used under one name in several components (an evaluation query is a /retrieve body).
    "ENUM_NAME_OVERRIDES": {"RetrievalModeEnum": "retrieval_app.request.MODES", "HealthStatusEnum": ["ok", "degraded"],
                            "StatusEnum": ["active", "draft"], "RankDefaultSourceEnum": ["catalog", "builtin"]},
    "POSTPROCESSING_HOOKS": ["catalog_app.api.schema.postprocess_enums_outside_json_schemas",
                             "memseek_site.openapi.postprocess_transport_rules"],
}

# Celery: with CELERY_BROKER_URL set, tasks go to real workers; unset, they run in-process
# right after the transaction that enqueued them commits.
CELERY_TASK_ALWAYS_EAGER = not os.environ.get("CELERY_BROKER_URL")
# Eager tasks never touch a broker; "memory://" keeps Celery from looking for a default one.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or "memory://"
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600")),
}
CELERY_TASK_IGNORE_RESULT = True
# The named queues and which task goes where (memseek_site.queues, docs/queues.md). A worker
# started without -Q consumes all of them.
CELERY_TASK_QUEUES = [Queue(name) for name in QUEUES]
CELERY_TASK_DEFAULT_QUEUE = DEFAULT_QUEUE
CELERY_TASK_ROUTES = TASK_ROUTES
CELERY_TASK_ANNOTATIONS = [TaskTimeLimits()]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

MEMSEEK: dict = {}
