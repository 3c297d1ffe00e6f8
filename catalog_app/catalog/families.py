"""Registers the families ``catalog_app`` owns: models, processors, collections.

Load order (reference 4.4): models → processors → (rank defaults, search profiles, registered by
search_app) → collections → (views, registered by search_app).
"""
from . import collections, models_conf, processors
from .registry import Family, register_family

register_family(Family(
    name="models", order=10, patterns=("conf/models.yaml",), shape="single", top_key=None,
    single_name="models", versioned=False, validate=models_conf.validate, build=models_conf.build,
    default_body=models_conf.default_body))
register_family(Family(
    name="processor", order=20, patterns=("conf/processors.yaml", "conf/processors/*.yaml"), shape="list",
    top_key="processors", versioned=False, validate=processors.validate, build=processors.build,
    check_family=processors.check_family))
register_family(Family(
    name="collection", order=50, patterns=("collections/*.yaml",), shape="list", top_key="collections",
    versioned=True, validate=collections.validate, build=collections.build))
